//! `GET /api/v1/openapi.json`: the served document is the one pinned in `docs/openapi.json`,
//! so any change to the API's shape shows up in review. After a deliberate change, write the
//! new pin with `BURNRATE_BLESS_OPENAPI=1 cargo test --features ssr --test it openapi`.

use sqlx::PgPool;

use super::token;
use crate::common::spawn_app;
use burnrate::auth::Role;

const PINNED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");

#[sqlx::test]
async fn the_served_document_is_the_pinned_one_and_names_every_route(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    assert_eq!(
        app.api("GET", "/api/v1/openapi.json", None, None).await.status,
        401,
        "the document needs a token like every other route"
    );
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let response = app.api("GET", "/api/v1/openapi.json", Some(&viewer), None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let served: serde_json::Value = serde_json::from_str(&response.body).expect("json");
    if std::env::var_os("BURNRATE_BLESS_OPENAPI").is_some() {
        let text = serde_json::to_string_pretty(&served).expect("pretty") + "\n";
        std::fs::write(PINNED, text).expect("write docs/openapi.json");
    }
    let pinned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(PINNED).expect("docs/openapi.json")).expect("pinned json");
    assert!(
        served == pinned,
        "/api/v1/openapi.json differs from docs/openapi.json; if the change is meant, run \
         BURNRATE_BLESS_OPENAPI=1 cargo test --features ssr --test it openapi and commit the file"
    );

    assert_eq!(served["openapi"], "3.1.0");
    let paths = served["paths"].as_object().expect("paths");
    for (path, method) in [
        ("/api/v1/teams", "get"),
        ("/api/v1/budgets", "get"),
        ("/api/v1/approvals", "get"),
        ("/api/v1/preflight", "post"),
        ("/api/v1/openapi.json", "get"),
    ] {
        let operation = &paths[path][method];
        assert!(operation.is_object(), "{method} {path} is documented");
        assert!(
            operation["responses"]["401"].is_object() && operation["responses"]["429"].is_object(),
            "{method} {path} documents the token's refusals"
        );
    }
    // Clients generated from the document name each operation by its id: one per operation.
    let ids: Vec<&str> = paths
        .values()
        .flat_map(|item| item.as_object().into_iter().flat_map(|ops| ops.values()))
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (14, 14), "{ids:?}");
    assert_eq!(
        served["components"]["securitySchemes"]["bearer"]["scheme"], "bearer",
        "the token is a bearer credential"
    );
}

/// Each documented route that needs no parameter answers a token holder, and an
/// undocumented one is a problem+json 404: the document and the router do not drift apart.
#[sqlx::test]
async fn every_documented_get_route_answers_and_others_are_not_found(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = token(&pool, "admin@example.com", Role::Admin, None).await;
    let served: serde_json::Value =
        serde_json::from_str(&app.api("GET", "/api/v1/openapi.json", Some(&admin), None).await.body).expect("json");
    for (path, item) in served["paths"].as_object().expect("paths") {
        let needs_parameters = item["get"]["parameters"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["required"] == true));
        if item.get("get").is_none() || path.contains('{') || needs_parameters {
            continue;
        }
        let response = app.api("GET", path, Some(&admin), None).await;
        assert_eq!(response.status, 200, "GET {path}: {}", response.body);
    }
    let missing = app.api("GET", "/api/v1/nothing-here", Some(&admin), None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), "application/problem+json");
}

/// `docs/API.md` is checked against the pinned document: each operation has its row in the
/// routes table, and the table names no operation the document lacks.
#[test]
fn the_api_guide_lists_exactly_the_documented_operations() {
    let pinned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(PINNED).expect("docs/openapi.json")).expect("json");
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/API.md")).expect("docs/API.md");
    let mut documented: Vec<String> = pinned["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .into_iter()
                .flat_map(|ops| ops.keys())
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    documented.sort();
    // The routes table's first cells: | `GET /api/v1/teams` | …
    let mut listed: Vec<String> = guide
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(route, _)| route.to_string()))
        .filter(|route| route.contains(" /api/v1/"))
        .collect();
    listed.sort();
    assert_eq!(
        listed, documented,
        "docs/API.md's routes table against docs/openapi.json"
    );
}
