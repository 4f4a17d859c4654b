//! The OpenAPI 3.1 document of `/api/v1`, generated from the handlers' own types and
//! attributes (utoipa), served at `/api/v1/openapi.json` to a token holder. `docs/openapi.json`
//! pins it: a test fails when the two differ, so a change to the API is a deliberate one.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::Problem;
use super::responses::{Conflict, Forbidden, Invalid, NotFound, TooMany, Unauthorized, Unreadable};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "burnrate API",
        version = "1",
        description = "GPU and AI cloud spend: budgets, approvals, pre-flight checks. Every call \
            carries `Authorization: Bearer brt_…` (an API token). Amounts are decimal strings in \
            USD; days are UTC dates. Errors are `application/problem+json` (RFC 9457)."
    ),
    paths(
        super::teams::list,
        super::costs::list,
        super::budgets::list,
        super::budget_writes::create,
        super::budget_writes::update,
        super::approvals::list,
        super::approvals::requests_list,
        super::approvals::request,
        super::approvals::decide,
        super::enforcement::violations,
        super::savings::recommendations,
        super::savings::decide,
        super::preflight::check,
        document,
    ),
    components(
        schemas(Problem),
        responses(Unauthorized, Forbidden, NotFound, Conflict, Invalid, Unreadable, TooMany)
    ),
    modifiers(&BearerToken),
    security(("bearer" = []))
)]
pub struct ApiDoc;

/// Every operation takes the token as a bearer credential.
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("brt_…")
                    .description(Some("An API token from the account page or `burnrate token create`"))
                    .build(),
            ),
        );
    }
}

/// This document.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    operation_id = "openapi",
    tag = "meta",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of /api/v1", content_type = "application/json"),
        super::responses::EveryCall,
    )
)]
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
