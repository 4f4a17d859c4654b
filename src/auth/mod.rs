//! Sign-in, sessions and roles. Every server function asks [`caller`] (or
//! [`require_admin`]) who is calling, but for the five public ones sign-in and setup need
//! (`server_fns.rs`); the HTTP middleware only adds a second line of defence.

pub mod model;
pub mod pages;
pub mod server_fns;

pub use model::{Caller, Role};

#[cfg(feature = "ssr")]
pub mod accounts;
#[cfg(feature = "ssr")]
pub mod lifecycle;
#[cfg(feature = "ssr")]
pub mod middleware;
#[cfg(feature = "ssr")]
pub mod password;
#[cfg(feature = "ssr")]
pub mod rate_limit;
#[cfg(feature = "ssr")]
pub mod sessions;
#[cfg(feature = "ssr")]
pub mod setup_token;
#[cfg(feature = "ssr")]
pub mod tokens;

#[cfg(feature = "ssr")]
use crate::error::AppError;

#[cfg(feature = "ssr")]
impl From<&Caller> for crate::audit_log::Actor {
    fn from(caller: &Caller) -> crate::audit_log::Actor {
        crate::audit_log::Actor {
            account_id: Some(caller.account_id),
            label: caller.email.clone(),
        }
    }
}

/// The caller of the current server function or page render.
#[cfg(feature = "ssr")]
pub fn caller() -> Result<Caller, AppError> {
    leptos::prelude::use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>().cloned())
        .ok_or(AppError::Unauthorized)
}

/// The caller, if an admin; otherwise 401 or 403.
#[cfg(feature = "ssr")]
pub fn require_admin() -> Result<Caller, AppError> {
    let caller = caller()?;
    if caller.is_admin() {
        Ok(caller)
    } else {
        Err(AppError::Forbidden("only admins may do this".into()))
    }
}

/// Where sign-in may send the browser: a path on this site, or `/`. `next` is checked as
/// text and then resolved as a browser would resolve it against this site, and the result
/// must stay on the site. Browsers drop tabs and newlines and read `\\` as `/`, so
/// `/\t/evil.example` or `/\\evil.example` would leave it: any control character,
/// whitespace, backslash, non-ASCII or encoded slash, backslash or control character sends
/// the caller to `/` instead. Never panics.
#[cfg(feature = "ssr")]
pub fn safe_next(next: Option<&str>) -> String {
    const HOME: &str = "/";
    let Some(path) = next else {
        return HOME.into();
    };
    let lower = path.to_ascii_lowercase();
    let encoded_danger = ["%2f", "%5c", "%7f", "%0", "%1"].iter().any(|e| lower.contains(e));
    let plain = path.len() <= 2048
        && path.starts_with('/')
        && !path.starts_with("//")
        && path.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
        && !encoded_danger;
    if !plain {
        return HOME.into();
    }
    // Resolved against a placeholder origin, the path must keep that origin.
    let origin = "http://burnrate.invalid";
    let Ok(base) = url::Url::parse(origin) else {
        return HOME.into();
    };
    match base.join(path) {
        // Dot segments can normalise `/.//evil.example` into `//evil.example`: refused.
        Ok(resolved) if resolved.origin() == base.origin() && !resolved.path().starts_with("//") => {
            let query = resolved.query().map(|q| format!("?{q}")).unwrap_or_default();
            format!("{}{query}", resolved.path())
        }
        _ => HOME.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_redirects_only_to_local_paths() {
        assert_eq!(safe_next(Some("/teams?period=prev")), "/teams?period=prev");
        assert_eq!(
            safe_next(Some("/projects/caf%C3%A9?period=30d")),
            "/projects/caf%C3%A9?period=30d"
        );
        assert_eq!(safe_next(Some("/a/../budgets")), "/budgets");
        assert_eq!(safe_next(None), "/");
    }

    /// Values that try to leave the site, break the header, or crash the handler.
    pub const HOSTILE_NEXT: [&str; 48] = [
        "//evil.example",
        "///evil.example",
        "////evil.example",
        "https://evil.example",
        "http://evil.example/",
        "HTTPS://evil.example",
        "//evil.example/%2f..",
        "/\\evil.example",
        "\\\\evil.example",
        "/\\/evil.example",
        "\\/evil.example",
        "/\t/evil.example",
        "/%09/evil.example",
        "/\n/evil.example",
        "/%0A",
        "/%0a/evil.example",
        "/%0D%0ALocation:%20https://evil.example",
        "/\r\nSet-Cookie:%20a=b",
        "/%2F/evil.example",
        "/%2f%2fevil.example",
        "/%5C/evil.example",
        "/%5cevil.example",
        "/%00",
        "/%7F",
        "/%1b[31m",
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "evil.example",
        "evil.example/path",
        "@evil.example",
        "/ /evil.example",
        " //evil.example",
        "/\u{3000}/evil.example",
        "/\u{2028}",
        "/\u{ff0f}evil.example",
        "\u{0}",
        "",
        " ",
        "%2F%2Fevil.example",
        "/.%2e/%2e%2e/%2f/evil.example",
        "https:evil.example",
        "/@evil.example:@evil.example",
        "/.//evil.example",
        "/a/..//evil.example",
        "/%2e//evil.example",
        "/%2E%2E//evil.example",
    ];

    #[test]
    fn no_hostile_next_leaves_the_site_or_panics() {
        for hostile in HOSTILE_NEXT {
            let target = safe_next(Some(hostile));
            assert!(
                target.starts_with('/') && !target.starts_with("//") && !target.contains('\\'),
                "{hostile:?} -> {target:?}"
            );
            assert!(
                target.bytes().all(|b| b.is_ascii_graphic()),
                "{hostile:?} -> {target:?}"
            );
            let resolved = url::Url::parse("http://burnrate.invalid/")
                .and_then(|base| base.join(&target))
                .expect("a path");
            assert_eq!(resolved.host_str(), Some("burnrate.invalid"), "{hostile:?}");
        }
        // Dot segments that a browser would normalise into `//host` go home, checked as text
        // (not by resolving again with the same parser).
        for dots in ["/.//evil.example", "/a/..//evil.example", "/%2e//evil.example"] {
            assert_eq!(safe_next(Some(dots)), "/", "{dots}");
        }
        // A long value is refused rather than echoed.
        assert_eq!(safe_next(Some(&format!("/{}", "a".repeat(5000)))), "/");
    }

    #[test]
    fn leads_edit_only_their_teams_and_viewers_nothing() {
        let lead = Caller {
            account_id: 1,
            email: "a@x".into(),
            display_name: String::new(),
            role: Role::Lead,
            team_ids: vec![7],
        };
        assert!(lead.can_edit_team(7));
        assert!(!lead.can_edit_team(8));
        let viewer = Caller {
            role: Role::Viewer,
            ..lead.clone()
        };
        assert!(!viewer.can_edit_team(7));
        let admin = Caller {
            role: Role::Admin,
            team_ids: vec![],
            ..lead
        };
        assert!(admin.can_edit_team(8));
    }
}
