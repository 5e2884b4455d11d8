//! Receiving addresses for newsletters (issue 36): list, create (a random token, with an
//! optional label after a `+`), revoke. Mail to a revoked or unknown address is refused.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use tidings_store::{MailAddress, StoreError};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::base::auth::Auth;
use crate::base::error::{ApiError, ApiResult, ErrorBody, ErrorCategory};
use crate::base::extract::{Json, Path};
use crate::base::state::AppState;
use crate::base::time::time;

/// Addresses one user may have at once; more is a sign of a script gone wrong.
pub const MAX_ADDRESSES_PER_USER: usize = 100;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_addresses, create_address))
        .routes(routes!(revoke_address))
}

/// A receiving address.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailAddressView {
    /// The address's id.
    pub id: i64,
    /// The address to subscribe newsletters with: `<token>@<domain>` or
    /// `<token>+<label>@<domain>`.
    pub address: String,
    /// The label, when it was given one.
    pub label: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: String,
}

/// The user's addresses.
#[derive(Debug, Serialize, ToSchema)]
pub struct MailAddressList {
    /// Whether this server receives newsletters by email (`TIDINGS_MAIL_DOMAIN` is set).
    /// When it does not, `addresses` is empty and creating one answers 409 `mail_off`.
    pub enabled: bool,
    /// Oldest first; revoked ones are not listed.
    pub addresses: Vec<MailAddressView>,
}

/// A new address.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateMailAddress {
    /// A label to tell the address apart (`shop` gives `<token>+shop@…`): 1 to 32 letters,
    /// digits, `-`, `_` or `.`.
    pub label: Option<String>,
}

/// The domain addresses are at, or the refusal that says mail is off.
fn domain(state: &AppState) -> ApiResult<&str> {
    state.config.mail.domain.as_deref().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "mail_off",
            ErrorCategory::Validation,
            "Newsletters by email are off on this server.",
            "The administrator sets TIDINGS_MAIL_DOMAIN (see docs/newsletters.md).",
        )
    })
}

fn view(address: &MailAddress, domain: &str) -> MailAddressView {
    MailAddressView {
        id: address.id,
        address: address.at(domain),
        label: address.label.clone(),
        created_at: time(address.created_at),
    }
}

/// The signed-in user's receiving addresses, and whether the server receives mail at all.
/// With mail off this answers 200 with `enabled: false` rather than an error: a settings page
/// that asks is not doing anything wrong (only creating an address is refused then).
#[utoipa::path(get, path = "/mail-addresses", tag = "mail",
    responses(
        (status = 200, body = MailAddressList),
        (status = 401, body = ErrorBody),
    ))]
async fn list_addresses(
    State(state): State<AppState>,
    auth: Auth,
) -> ApiResult<Json<MailAddressList>> {
    let Some(domain) = state.config.mail.domain.as_deref() else {
        return Ok(Json(MailAddressList {
            enabled: false,
            addresses: Vec::new(),
        }));
    };
    let addresses = state.store.list_mail_addresses(auth.user.id).await?;
    Ok(Json(MailAddressList {
        enabled: true,
        addresses: addresses.iter().map(|a| view(a, domain)).collect(),
    }))
}

/// Create a receiving address. Newsletters sent to it become items of a feed per sender, in
/// the group "Newsletters".
#[utoipa::path(post, path = "/mail-addresses", tag = "mail", request_body = CreateMailAddress,
    responses(
        (status = 201, body = MailAddressView),
        (status = 400, description = "A label that is not allowed", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 409, description = "Mail is off, or the user has 100 addresses", body = ErrorBody),
    ))]
async fn create_address(
    State(state): State<AppState>,
    auth: Auth,
    Json(body): Json<CreateMailAddress>,
) -> ApiResult<(StatusCode, Json<MailAddressView>)> {
    let domain = domain(&state)?;
    let label = body.label.as_deref().filter(|l| !l.trim().is_empty());
    let existing = state.store.list_mail_addresses(auth.user.id).await?;
    if existing.len() >= MAX_ADDRESSES_PER_USER {
        return Err(ApiError::conflict(
            format!("You have {MAX_ADDRESSES_PER_USER} addresses already."),
            "Revoke one you no longer use first.",
        ));
    }
    // A token drawn twice is all but impossible (60 bits); draw again if it happens.
    let mut attempts = 0;
    let address = loop {
        let token = crate::mail::new_token();
        match state
            .store
            .create_mail_address(auth.user.id, &token, label)
            .await
        {
            Err(StoreError::Conflict(_)) if attempts < 3 => attempts += 1,
            other => break other?,
        }
    };
    Ok((StatusCode::CREATED, Json(view(&address, domain))))
}

/// Revoke a receiving address: mail to it is refused from now on. The feeds it brought stay.
#[utoipa::path(delete, path = "/mail-addresses/{id}", tag = "mail",
    params(("id" = i64, Path, description = "The address's id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn revoke_address(
    State(state): State<AppState>,
    auth: Auth,
    Path(id): Path<i64>,
) -> ApiResult<StatusCode> {
    state.store.revoke_mail_address(auth.user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
