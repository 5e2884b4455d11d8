//! `tidings user`: add, list, change the password of, and delete user accounts; the operator's
//! ways back in (a user's lost second factor, password sign-in turned off while the OpenID
//! provider is down).

use crate::output::{out, outln};
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use tidings_server::password;
use tidings_store::{NewUser, Store};

use crate::config::GlobalConfig;

/// The environment variable a password may come from, for scripts.
pub const PASSWORD_ENV: &str = "TIDINGS_PASSWORD";

/// `tidings user …`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user. The password comes from TIDINGS_PASSWORD, else a prompt, else the first
    /// line of standard input.
    Add(AddArgs),
    /// List every user.
    List(ListArgs),
    /// Set a user's password (read like `add` does). The user's sessions end and their API
    /// keys are revoked, unless --keep-sessions / --keep-keys keep them.
    Passwd(PasswdArgs),
    /// Delete a user and everything that is only theirs; shared feeds stay.
    Delete(DeleteArgs),
    /// Remove a user's one-time codes, recovery codes and passkeys (the way back in for a user
    /// who lost them). Their sessions end; API keys keep working.
    ResetSecondFactors(ResetSecondFactorsArgs),
    /// Turn password sign-in on or off for every user (the way back in when passwords are off
    /// and the OpenID provider is down). Shows the current setting without an argument.
    PasswordSignIn(PasswordSignInArgs),
}

/// Arguments of `tidings user reset-second-factors`.
#[derive(Debug, Args)]
pub struct ResetSecondFactorsArgs {
    /// The login name.
    pub name: String,
}

/// Arguments of `tidings user password-sign-in`.
#[derive(Debug, Args)]
pub struct PasswordSignInArgs {
    /// `on` or `off`; without it the current setting is printed.
    #[arg(value_parser = ["on", "off"])]
    pub state: Option<String>,
}

/// Arguments of `tidings user add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The login name: letters of one script, digits, '.', '_', '-', '@'. It is kept as typed;
    /// signing in ignores case, width and accent composition.
    pub name: String,
    /// Make the user an administrator (manages other users).
    #[arg(long)]
    pub admin: bool,
}

/// Arguments of `tidings user list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `tidings user passwd`.
#[derive(Debug, Args)]
pub struct PasswdArgs {
    /// The login name.
    pub name: String,
    /// Keep the user's sessions signed in (by default they all end, so that whoever knew the
    /// old password is signed out).
    #[arg(long)]
    pub keep_sessions: bool,
    /// Keep the user's API keys working (by default they are all revoked).
    #[arg(long)]
    pub keep_keys: bool,
}

/// Arguments of `tidings user delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The login name.
    pub name: String,
    /// Do not ask for confirmation (needed when not run from a terminal).
    #[arg(long)]
    pub yes: bool,
}

/// Runs `tidings user …`.
pub async fn run(config: &GlobalConfig, command: UserCommand) -> anyhow::Result<ExitCode> {
    let store = super::open_existing_store(config).await?;
    let result = match command {
        UserCommand::Add(args) => add(&store, args).await,
        UserCommand::List(args) => list(&store, args).await,
        UserCommand::Passwd(args) => passwd(&store, args).await,
        UserCommand::Delete(args) => delete(&store, args).await,
        UserCommand::ResetSecondFactors(args) => reset_second_factors(&store, args).await,
        UserCommand::PasswordSignIn(args) => password_sign_in(&store, args).await,
    };
    store.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

async fn add(store: &Store, args: AddArgs) -> anyhow::Result<()> {
    let username = tidings_store::normalize_username(&args.name)?;
    if store.user_credentials(&username).await?.is_some() {
        bail!("a user named {username} already exists");
    }
    let password = read_new_password(&username)?;
    password::check_password_policy(&password, &username)?;
    let hash = hash_off_thread(password).await?;
    let user = store
        .create_user(&NewUser {
            username,
            password_hash: Some(hash),
            is_admin: args.admin,
        })
        .await?;
    if user.is_admin {
        // The first administrator exists: the setup link printed by `serve` stops working.
        store.clear_setup_token().await?;
    }
    outln!(
        "created user {} (id {}{})",
        user.username,
        user.id,
        if user.is_admin { ", administrator" } else { "" }
    );
    Ok(())
}

async fn list(store: &Store, args: ListArgs) -> anyhow::Result<()> {
    let users = store.list_users().await?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&users)?);
        return Ok(());
    }
    if users.is_empty() {
        outln!("no users yet: add one with `tidings user add NAME --admin`");
        return Ok(());
    }
    let width = users
        .iter()
        .map(|u| u.username.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    outln!(
        "{:>6}  {:width$}  {:13}  {:8}  {:20}  LAST SIGN-IN",
        "ID",
        "NAME",
        "ROLE",
        "STATUS",
        "CREATED"
    );
    for user in users {
        outln!(
            "{:>6}  {:width$}  {:13}  {:8}  {:20}  {}",
            user.id,
            user.username,
            if user.is_admin {
                "administrator"
            } else {
                "user"
            },
            if user.is_disabled {
                "disabled"
            } else {
                "active"
            },
            format_time(Some(user.created_at)),
            format_time(user.last_login_at),
        );
    }
    Ok(())
}

async fn passwd(store: &Store, args: PasswdArgs) -> anyhow::Result<()> {
    let Some((user, _)) = store.user_credentials(&args.name).await? else {
        bail!("no user named {}", args.name.trim());
    };
    let password = read_new_password(&user.username)?;
    password::check_password_policy(&password, &user.username)?;
    let hash = hash_off_thread(password).await?;
    store.set_password_hash(user.id, &hash).await?;
    // As the API's password change does (F23): a new password usually means the old one
    // leaked, so what was signed in with it stops working unless the operator says otherwise.
    let sessions = if args.keep_sessions {
        "sessions kept".to_string()
    } else {
        let ended = store.delete_user_sessions(user.id, None).await?;
        format!("{ended} session{} ended", plural(ended))
    };
    let keys = if args.keep_keys {
        "API keys kept".to_string()
    } else {
        let revoked = store.revoke_user_api_keys(user.id).await?;
        format!("{revoked} API key{} revoked", plural(revoked))
    };
    outln!("password of {} changed; {sessions}, {keys}", user.username);
    Ok(())
}

async fn reset_second_factors(store: &Store, args: ResetSecondFactorsArgs) -> anyhow::Result<()> {
    let Some((user, _)) = store.user_credentials(&args.name).await? else {
        bail!("no user named {}", args.name.trim());
    };
    let before = store.second_factors(user.id).await?;
    store.delete_totp(user.id).await?;
    store.delete_recovery_codes(user.id).await?;
    for passkey in store.passkeys(user.id).await? {
        store.delete_passkey(user.id, passkey.id).await?;
    }
    // Whoever holds the lost device may be signed in with it: those sessions end too.
    let ended = store.delete_user_sessions(user.id, None).await?;
    let passkeys = u64::try_from(before.passkeys).unwrap_or(0);
    outln!(
        "second factors of {} removed: {}, {passkeys} passkey{}, {} unused recovery code{}; \
         {ended} session{} ended; they now sign in with their password alone",
        user.username,
        if before.totp {
            "one-time codes"
        } else {
            "no one-time codes"
        },
        plural(passkeys),
        before.recovery_codes_left,
        plural(u64::try_from(before.recovery_codes_left).unwrap_or(0)),
        plural(ended),
    );
    Ok(())
}

async fn password_sign_in(store: &Store, args: PasswordSignInArgs) -> anyhow::Result<()> {
    if let Some(state) = args.state {
        store.set_password_sign_in(state == "on").await?;
    }
    let on = store.password_sign_in().await?;
    outln!(
        "password sign-in is {}",
        if on {
            "on"
        } else {
            "off: only linked OpenID identities and passkeys sign in"
        }
    );
    Ok(())
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

async fn delete(store: &Store, args: DeleteArgs) -> anyhow::Result<()> {
    let Some((user, _)) = store.user_credentials(&args.name).await? else {
        bail!("no user named {}", args.name.trim());
    };
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!("deleting {} needs confirmation: add --yes", user.username);
        }
        out!(
            "Delete {} with their subscriptions, stars and bookmarks? Type the name to confirm: ",
            user.username
        );
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        let same_name = answer.trim() == user.username
            || matches!(
                (
                    tidings_store::username_key(&answer),
                    tidings_store::username_key(&user.username),
                ),
                (Ok(typed), Ok(key)) if typed == key
            );
        if !same_name {
            bail!("not deleted: the name typed did not match");
        }
    }
    store.delete_user(user.id).await?;
    outln!("deleted user {}", user.username);
    Ok(())
}

/// Reads a new password: `TIDINGS_PASSWORD`, else a prompt asked twice on a terminal, else
/// the first line of standard input.
fn read_new_password(username: &str) -> anyhow::Result<String> {
    if let Ok(password) = std::env::var(PASSWORD_ENV) {
        return Ok(password);
    }
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("Password for {username}: "))
            .context("cannot read the password")?;
        password::check_password_policy(&first, username)?;
        let second = rpassword::prompt_password("Repeat the password: ")
            .context("cannot read the password")?;
        if first != second {
            bail!("the two passwords differ; nothing was changed");
        }
        return Ok(first);
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("cannot read the password from standard input")?;
    let password = line.trim_end_matches(['\r', '\n']).to_string();
    if password.is_empty() {
        bail!(
            "no password given: set {PASSWORD_ENV}, pipe it on standard input, or run from a terminal"
        );
    }
    Ok(password)
}

/// Hashes a password on a blocking thread: argon2 takes tens of milliseconds of CPU.
pub async fn hash_off_thread(password: String) -> anyhow::Result<String> {
    Ok(tokio::task::spawn_blocking(move || password::hash_password(&password)).await??)
}

fn format_time(secs: Option<i64>) -> String {
    secs.and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "-".into())
}
