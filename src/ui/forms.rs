//! Errors of a form's last submission: beside the field they name, or above the button.

use leptos::prelude::*;

use crate::error::AppError;

/// The message for `field` from the last submission, if it named that field.
pub fn field_error<T>(result: Signal<Option<Result<T, AppError>>>, field: &'static str) -> impl Fn() -> Option<AnyView>
where
    T: Clone + Send + Sync + 'static,
{
    move || {
        last_error(result).and_then(|err| err.for_field(field)).map(|message| {
            view! { <span class="field-error" role="alert" data-testid=format!("error-{field}")>{message}</span> }
                .into_any()
        })
    }
}

/// The last submission's error, above the button. With `beside_fields`, errors that name
/// a field are left to that field's [`field_error`], so each problem shows once.
#[component]
pub fn FormError<T>(result: Signal<Option<Result<T, AppError>>>, #[prop(optional)] beside_fields: bool) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
{
    move || {
        last_error(result)
            .filter(|err| !(beside_fields && matches!(err, AppError::InvalidFields(_) | AppError::InvalidInput { .. })))
            .map(|err| view! { <p class="error" role="alert" data-testid="form-error">{err.to_string()}</p> })
    }
}

/// The last submission's error, if it failed.
fn last_error<T>(result: Signal<Option<Result<T, AppError>>>) -> Option<AppError>
where
    T: Clone + Send + Sync + 'static,
{
    result.get().and_then(Result::err)
}

/// The action's version as of its last successful submission. Data keyed on it reloads
/// after a change, but not after a refused submission: reloading then would rebuild the
/// form the user is correcting and reset what they had chosen.
pub fn saved_version<S>(action: ServerAction<S>) -> Memo<usize>
where
    S: leptos::server_fn::ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
{
    let (version, result) = (action.version(), action.value());
    Memo::new(move |last: Option<&usize>| {
        let version = version.get();
        if result.with(|r| matches!(r, Some(Ok(_)))) {
            version
        } else {
            last.copied().unwrap_or(version)
        }
    })
}
