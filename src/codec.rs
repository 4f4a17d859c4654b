//! How page data crosses from server to browser, in one JSON decoder.
//!
//! A resource's data arrives twice in the browser: in the server-rendered page (decoded by
//! the resource's codec) and, after a filter change, as a server function's response
//! (decoded by `server_fn` with `serde_json::from_slice`). leptos's default resource codec
//! decodes with `from_str`, a different reader type, so every data type's deserializer was
//! compiled into the wasm twice. This codec reads through the same `from_slice`, and each
//! type's deserializer exists once.

use leptos::prelude::*;
use leptos::server::codee::{Decoder, Encoder};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// JSON, decoded as server-function responses are.
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_slice(text.as_bytes())
    }
}

/// A resource (as `Resource::new`) whose data uses [`Json`].
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, Json>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: Send + Sync + Clone + PartialEq + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}
