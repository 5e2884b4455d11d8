//! The OpenID Connect settings of `tidings serve` (F22).

use clap::Args;
use tidings_server::oidc::{DEFAULT_SCOPES, OidcConfig, parse_scopes};

use crate::config::{self, ConfigError};

/// Signing in through an OpenID Connect provider (Google, Authelia, Authentik, Keycloak…).
#[derive(Debug, Args)]
pub struct OidcArgs {
    /// The provider's issuer URL, e.g. https://accounts.google.com or
    /// https://keycloak.example.com/realms/home; its discovery document is read from
    /// ISSUER/.well-known/openid-configuration. Unset: no single sign-on.
    #[arg(long, env = "TIDINGS_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// The client id registered at the provider for this server.
    #[arg(long, env = "TIDINGS_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// The client secret registered at the provider (none for a public client).
    #[arg(long, env = "TIDINGS_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,

    /// The scopes asked for, space-separated (openid is always added).
    #[arg(long, env = "TIDINGS_OIDC_SCOPES", default_value = DEFAULT_SCOPES)]
    pub oidc_scopes: String,

    /// The provider's name on the sign-in button, "Sign in with NAME" (default: the issuer's
    /// host name).
    #[arg(long, env = "TIDINGS_OIDC_NAME")]
    pub oidc_name: Option<String>,

    /// Create an account at the first sign-in of an identity no account is linked to (off:
    /// such a sign-in is refused, and identities are linked from Account).
    #[arg(
        long,
        env = "TIDINGS_OIDC_SIGNUP",
        default_value = "false",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "true|false"
    )]
    pub oidc_signup: String,
}

impl OidcArgs {
    /// Checks the settings: `None` when no issuer is set; a client id is then required.
    pub fn check(&self) -> Result<Option<OidcConfig>, ConfigError> {
        let signup = config::check_bool(&self.oidc_signup, "TIDINGS_OIDC_SIGNUP", "--oidc-signup")?;
        let set = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let Some(issuer_text) = set(&self.oidc_issuer) else {
            return Ok(None);
        };
        let issuer = url::Url::parse(&issuer_text)
            .ok()
            .filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.query().is_none()
                    && u.fragment().is_none()
            })
            .ok_or_else(|| ConfigError {
                variable: "TIDINGS_OIDC_ISSUER",
                flag: "--oidc-issuer",
                value: issuer_text.clone(),
                expected: "the provider's issuer URL, such as https://accounts.google.com \
                           (http(s), no query)"
                    .into(),
            })?;
        let client_id = set(&self.oidc_client_id).ok_or_else(|| ConfigError {
            variable: "TIDINGS_OIDC_CLIENT_ID",
            flag: "--oidc-client-id",
            value: String::new(),
            expected: "the client id registered at the provider, because TIDINGS_OIDC_ISSUER \
                       is set"
                .into(),
        })?;
        let mut oidc = OidcConfig::new(issuer, client_id);
        oidc.client_secret = set(&self.oidc_client_secret);
        oidc.scopes = parse_scopes(&self.oidc_scopes);
        if let Some(name) = set(&self.oidc_name) {
            oidc.display_name = name;
        }
        oidc.signup = signup;
        Ok(Some(oidc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(issuer: Option<&str>, client_id: Option<&str>) -> OidcArgs {
        OidcArgs {
            oidc_issuer: issuer.map(str::to_owned),
            oidc_client_id: client_id.map(str::to_owned),
            oidc_client_secret: Some(" s3cret ".into()),
            oidc_scopes: "email groups".into(),
            oidc_name: None,
            oidc_signup: "false".into(),
        }
    }

    #[test]
    fn no_issuer_is_no_single_sign_on() {
        assert!(args(None, None).check().unwrap().is_none());
        assert!(args(Some("  "), Some("x")).check().unwrap().is_none());
    }

    #[test]
    fn an_issuer_needs_a_client_id_and_an_http_url() {
        let error = args(Some("https://id.example.com"), None)
            .check()
            .unwrap_err();
        assert_eq!(error.variable, "TIDINGS_OIDC_CLIENT_ID");
        for bad in [
            "id.example.com",
            "ftp://id.example.com",
            "https://id.example.com/?x=1",
        ] {
            let error = args(Some(bad), Some("c")).check().unwrap_err();
            assert_eq!(error.variable, "TIDINGS_OIDC_ISSUER", "{bad}");
        }
        let mut wrong = args(Some("https://id.example.com"), Some("c"));
        wrong.oidc_signup = "maybe".into();
        assert_eq!(wrong.check().unwrap_err().variable, "TIDINGS_OIDC_SIGNUP");
    }

    #[test]
    fn the_settings_are_read_as_given() {
        let config = args(
            Some("https://kc.example.com/realms/home"),
            Some(" tidings "),
        )
        .check()
        .unwrap()
        .unwrap();
        assert_eq!(config.issuer.as_str(), "https://kc.example.com/realms/home");
        assert_eq!(config.client_id, "tidings");
        assert_eq!(config.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(config.scopes, ["openid", "email", "groups"]);
        assert_eq!(config.display_name, "kc.example.com");
        assert!(!config.signup);
    }
}
