//! The HTTP server: routes, sessions and the rendered-page cache.

mod http;
mod page_cache;
