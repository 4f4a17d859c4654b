//! How page data crosses from server to browser, in one JSON decoder.
//!
//! A resource's data arrives twice in the browser: in the server-rendered page (decoded by
//! the resource's codec) and, after a filter change, as a server function's response
//! (decoded by `server_fn` with `serde_json::from_slice`). leptos's default resource codec
//! decodes with `from_str`, a different reader type, so every data type's deserializer was
//! compiled into the wasm twice. This codec reads through the same `from_slice`, and each
//! type's deserializer exists once.
//!
//! The codec also leaves server-drawn charts ([`Svg`]) out of the data a page carries for
//! hydration: the chart is in the page's HTML already.

use std::cell::Cell;

use leptos::prelude::*;
use leptos::server::codee::{Decoder, Encoder};

use crate::error::AppError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize, Serializer};

thread_local! {
    /// True while [`Json`] encodes a resource for the page's hydration data.
    static ENCODING_FOR_HYDRATION: Cell<bool> = const { Cell::new(false) };
}

/// A chart's SVG markup, drawn on the server, inside page data; shown with `inner_html`.
///
/// Hydration keeps markup the server put in an `inner_html` element, so the copy a page's
/// hydration data would carry is never read: it was the largest part of that data (30 KB of
/// a Team page, escaped once as JSON and again as a script string). It is written as `""`
/// there. A server function's response, from which the browser builds the chart after a
/// filter change, carries the markup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Svg(pub String);

impl Serialize for Svg {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let markup = if ENCODING_FOR_HYDRATION.get() {
            ""
        } else {
            self.0.as_str()
        };
        serializer.serialize_str(markup)
    }
}

/// JSON, decoded as server-function responses are.
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        // Resources are encoded only for hydration data; serialization is synchronous, so
        // the flag covers exactly this call on this thread.
        ENCODING_FOR_HYDRATION.set(true);
        let encoded = serde_json::to_string(value);
        ENCODING_FOR_HYDRATION.set(false);
        encoded
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_slice(text.as_bytes())
    }
}

/// A page's data (as `Resource::new`), encoded with [`Json`]. On the server, a page whose
/// data fails answers with the error's status, as the server function's own response would
/// (`AppError`'s encoding sets it there): a 404 or 503 page is never cached as a 200.
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<Result<T, AppError>, Json>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: Send + Sync + Clone + PartialEq + 'static,
    Fut: Future<Output = Result<T, AppError>> + Send + 'static,
{
    let fetch = move |s: S| {
        // Boxed, so the future the resource holds carries a pointer, not a second copy of the
        // server function's state (page renders run on a test thread's small stack).
        let data = Box::pin(fetcher(s));
        async move {
            let data = data.await;
            #[cfg(feature = "ssr")]
            if let Err(err) = &data {
                err.set_response_status();
            }
            data
        }
    };
    Resource::new_with_options(source, fetch, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Page {
        total: String,
        chart: Svg,
    }

    fn page() -> Page {
        Page {
            total: "12.50".into(),
            chart: Svg("<svg><title>Spend</title></svg>".into()),
        }
    }

    #[test]
    fn hydration_data_leaves_the_chart_out_and_keeps_the_figures() {
        let encoded = <Json as Encoder<Page>>::encode(&page()).expect("encodes");
        assert_eq!(encoded, r#"{"total":"12.50","chart":""}"#);
        let decoded: Page = <Json as Decoder<Page>>::decode(&encoded).expect("decodes");
        assert_eq!(decoded.total, "12.50");
        assert_eq!(decoded.chart, Svg::default());
    }

    #[test]
    fn server_function_responses_carry_the_chart() {
        // Also after a hydration encode on the same thread: the flag does not stick.
        <Json as Encoder<Page>>::encode(&page()).expect("encodes");
        let response = serde_json::to_string(&page()).expect("encodes");
        let decoded: Page = serde_json::from_str(&response).expect("decodes");
        assert_eq!(decoded, page());
    }
}
