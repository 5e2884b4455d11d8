//! The SMTP listener (`TIDINGS_SMTP_LISTEN`, off by default): receives mail for this
//! installation's addresses from the senders' mail servers, for operators who point an MX
//! record at it. It is a receiving end only (RFC 5321 §4.1 as far as receiving needs):
//!
//! - it never relays: a recipient at another domain is refused at `RCPT` (550 5.7.1), and so is
//!   an unknown or revoked address here (550 5.1.1), before any message is sent;
//! - a message larger than `TIDINGS_SMTP_MAX_BYTES` is refused (announced with `SIZE` at
//!   `MAIL`, or counted while it arrives) with 552;
//! - floods are held back ([`SmtpLimits`]): connections per IP address, messages a minute per
//!   IP address and per sender (450 4.7.1, so that a real server retries later), messages and
//!   commands per connection, and a deadline for every command and every part of a message;
//! - with a certificate configured ([`SmtpTls`]) it offers STARTTLS (RFC 3207): after the
//!   handshake the conversation starts again from nothing (the client says EHLO again), and
//!   whatever the client sent after `STARTTLS` in clear text is dropped unread, so that no
//!   command can be slipped in ahead of the encryption.
//!
//! Each message goes through [`deliver`](super::deliver::deliver), the path of
//! `POST /inbound/mail` too.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use super::SmtpLimits;
use super::deliver::{DeliverError, deliver, recipient};
use super::tls::SmtpTls;
use crate::base::state::AppState;

/// The longest command line read (RFC 5321 §4.5.3.1.4 asks for 512; extensions add a little).
const MAX_COMMAND_LINE: u64 = 2_048;

/// Serves SMTP on `listener` until `shutdown` completes; connections in progress are left to
/// finish on their own (each is bounded by its deadlines).
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let guard = Arc::new(Guard::new(state.config.mail.smtp));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors and the like: wait a little rather than spin.
                tracing::warn!(%error, "smtp: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let state = state.clone();
        let guard = Arc::clone(&guard);
        tokio::spawn(async move {
            let ip = peer.ip();
            let Some(_slot) = guard.connection(ip) else {
                let mut stream = stream;
                let _ = stream
                    .write_all(b"421 4.7.0 Too many connections from your address\r\n")
                    .await;
                return;
            };
            let (read, write) = stream.into_split();
            let mut session = Session::new(&state, &guard, ip, BufReader::new(read), write);
            let tls = state.config.mail.tls.clone();
            session.tls_offered = tls.is_some();
            let ended = match (session.run(true).await, tls) {
                (Ok(Outcome::StartTls), Some(tls)) => secured(session, &tls).await,
                (outcome, _) => outcome.map(|_| ()),
            };
            if let Err(error) = ended {
                tracing::debug!(%error, %ip, "smtp: connection ended");
            }
        });
    }
}

/// The rest of a conversation after `STARTTLS`: the TLS handshake (within the idle deadline),
/// then a new session over it that knows nothing of what was said before (RFC 3207 §4.2) but
/// keeps counting the connection's messages and commands.
async fn secured(
    session: Session<'_, OwnedReadHalf, OwnedWriteHalf>,
    tls: &SmtpTls,
) -> Result<(), Ended> {
    let Session {
        state,
        guard,
        ip,
        reader,
        writer,
        messages,
        commands,
        ..
    } = session;
    if !reader.buffer().is_empty() {
        // Sent before the handshake, so not protected by it: dropped (the STARTTLS command
        // injection of CVE-2011-0411).
        tracing::info!(%ip, "smtp: input sent after STARTTLS in clear text dropped");
    }
    let stream = reader
        .into_inner()
        .reunite(writer)
        .map_err(|_| Ended::Closed)?;
    let stream = tokio::time::timeout(guard.limits.idle_timeout, tls.acceptor().accept(stream))
        .await
        .map_err(|_| Ended::Idle)??;
    let (read, write) = tokio::io::split(stream);
    let mut session = Session::new(state, guard, ip, BufReader::new(read), write);
    session.secure = true;
    session.messages = messages;
    session.commands = commands;
    session.run(false).await.map(|_| ())
}

/// How a conversation ended without an error.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// `QUIT`, or a limit reached.
    Done,
    /// `STARTTLS` was accepted: the TLS handshake comes next.
    StartTls,
}

/// The counters shared by every connection: connections open per IP address, and messages
/// per minute per IP address and per sender.
struct Guard {
    limits: SmtpLimits,
    connections: Mutex<HashMap<IpAddr, usize>>,
    /// `(key, minute)` → messages; keys are `ip:…` and `from:…`.
    minutes: Mutex<HashMap<String, (u64, u32)>>,
    started: Instant,
}

/// A connection's place among its address's, given back when dropped.
struct Slot<'a> {
    guard: &'a Guard,
    ip: IpAddr,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut connections = self
            .guard
            .connections
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(count) = connections.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                connections.remove(&self.ip);
            }
        }
    }
}

impl Guard {
    fn new(limits: SmtpLimits) -> Guard {
        Guard {
            limits,
            connections: Mutex::new(HashMap::new()),
            minutes: Mutex::new(HashMap::new()),
            started: Instant::now(),
        }
    }

    /// A connection slot for `ip`, unless it has all of its slots already.
    fn connection(&self, ip: IpAddr) -> Option<Slot<'_>> {
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        let count = connections.entry(ip).or_insert(0);
        if *count >= self.limits.connections_per_ip {
            return None;
        }
        *count += 1;
        Some(Slot { guard: self, ip })
    }

    /// Counts one message of `ip` from `sender`; `false` when either is over its limit this
    /// minute (then nothing is counted).
    fn message(&self, ip: IpAddr, sender: &str) -> bool {
        let minute = self.started.elapsed().as_secs() / 60;
        let mut minutes = self.minutes.lock().unwrap_or_else(|e| e.into_inner());
        if minutes.len() > 100_000 {
            // Only the current minute counts: older windows are dropped when the map grows.
            minutes.retain(|_, (m, _)| *m == minute);
        }
        let keys = [
            (format!("ip:{ip}"), self.limits.messages_per_minute_per_ip),
            (
                format!("from:{}", sender.to_ascii_lowercase()),
                self.limits.messages_per_minute_per_sender,
            ),
        ];
        let over = keys.iter().any(|(key, limit)| {
            minutes
                .get(key)
                .is_some_and(|(m, count)| *m == minute && count >= limit)
        });
        if over {
            return false;
        }
        for (key, _) in keys {
            let window = minutes.entry(key).or_insert((minute, 0));
            if window.0 != minute {
                *window = (minute, 0);
            }
            window.1 += 1;
        }
        true
    }
}

/// Why a connection ended early.
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("the client was silent too long")]
    Idle,
    #[error("a command line was too long")]
    LongLine,
    #[error("the connection closed")]
    Closed,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// One SMTP conversation.
struct Session<'a, R, W> {
    state: &'a AppState,
    guard: &'a Guard,
    ip: IpAddr,
    reader: BufReader<R>,
    writer: W,
    greeted: bool,
    sender: Option<String>,
    recipients: Vec<i64>,
    messages: u32,
    /// Commands read on this connection, before and after STARTTLS.
    commands: u32,
    /// Whether STARTTLS is offered (a certificate is configured).
    tls_offered: bool,
    /// Whether the conversation is encrypted already.
    secure: bool,
}

impl<'a, R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Session<'a, R, W> {
    fn new(
        state: &'a AppState,
        guard: &'a Guard,
        ip: IpAddr,
        reader: BufReader<R>,
        writer: W,
    ) -> Self {
        Session {
            state,
            guard,
            ip,
            reader,
            writer,
            greeted: false,
            sender: None,
            recipients: Vec::new(),
            messages: 0,
            commands: 0,
            tls_offered: false,
            secure: false,
        }
    }

    fn domain(&self) -> &str {
        self.state
            .config
            .mail
            .domain
            .as_deref()
            .unwrap_or("localhost")
    }

    async fn reply(&mut self, text: &str) -> Result<(), Ended> {
        self.writer.write_all(text.as_bytes()).await?;
        self.writer.write_all(b"\r\n").await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// The conversation, command by command, until `QUIT`, a limit, `STARTTLS` or the client
    /// leaves; `greet`: say the 220 greeting first (not after STARTTLS, where the client
    /// speaks first).
    async fn run(&mut self, greet: bool) -> Result<Outcome, Ended> {
        if greet {
            let greeting = format!(
                "220 {} ESMTP tidings: newsletters only, no relay",
                self.domain()
            );
            self.reply(&greeting).await?;
        }
        while self.commands < self.guard.limits.commands_per_connection {
            self.commands += 1;
            let line = match self.command_line().await {
                Ok(line) => line,
                Err(Ended::LongLine) => {
                    self.reply("500 5.5.2 Line too long").await?;
                    continue;
                }
                Err(Ended::Idle) => {
                    let _ = self.reply("421 4.4.2 Idle too long, closing").await;
                    return Err(Ended::Idle);
                }
                Err(other) => return Err(other),
            };
            let (verb, argument) = match line.split_once(' ') {
                Some((verb, argument)) => (verb.to_ascii_uppercase(), argument.trim()),
                None => (line.to_ascii_uppercase(), ""),
            };
            match verb.as_str() {
                "EHLO" => self.ehlo().await?,
                "HELO" => {
                    self.greeted = true;
                    let text = format!("250 {}", self.domain());
                    self.reply(&text).await?;
                }
                "MAIL" => self.mail_from(argument).await?,
                "RCPT" => self.rcpt_to(argument).await?,
                "DATA" => self.data().await?,
                "RSET" => {
                    self.reset();
                    self.reply("250 2.0.0 OK").await?;
                }
                "NOOP" => self.reply("250 2.0.0 OK").await?,
                "VRFY" => {
                    self.reply("252 2.1.5 Cannot verify, send the message")
                        .await?
                }
                "HELP" => self.reply("214 2.0.0 See docs/newsletters.md").await?,
                "QUIT" => {
                    let text = format!("221 2.0.0 {} closing", self.domain());
                    self.reply(&text).await?;
                    return Ok(Outcome::Done);
                }
                "STARTTLS" => {
                    if self.start_tls(argument).await? {
                        return Ok(Outcome::StartTls);
                    }
                }
                "AUTH" => {
                    self.reply("502 5.5.1 No authentication: this server does not relay")
                        .await?
                }
                _ => self.reply("500 5.5.1 Command not recognized").await?,
            }
        }
        let _ = self.reply("421 4.7.0 Too many commands, closing").await;
        Ok(Outcome::Done)
    }

    /// `STARTTLS`: `true` when the client is told to start the handshake.
    async fn start_tls(&mut self, argument: &str) -> Result<bool, Ended> {
        let refusal = if self.secure {
            "503 5.5.1 TLS already active"
        } else if !self.tls_offered {
            "454 4.7.0 TLS not available"
        } else if !argument.is_empty() {
            "501 5.5.4 Syntax: STARTTLS"
        } else {
            self.reply("220 2.0.0 Ready to start TLS").await?;
            return Ok(true);
        };
        self.reply(refusal).await?;
        Ok(false)
    }

    fn reset(&mut self) {
        self.sender = None;
        self.recipients.clear();
    }

    async fn ehlo(&mut self) -> Result<(), Ended> {
        self.greeted = true;
        self.reset();
        let starttls = if self.tls_offered && !self.secure {
            "250-STARTTLS\r\n"
        } else {
            ""
        };
        let text = format!(
            "250-{}\r\n250-SIZE {}\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n{starttls}250 ENHANCEDSTATUSCODES",
            self.domain(),
            self.state.config.mail.max_bytes
        );
        self.reply(&text).await
    }

    /// `MAIL FROM:<sender> [SIZE=n] […]`.
    async fn mail_from(&mut self, argument: &str) -> Result<(), Ended> {
        if !self.greeted {
            return self.reply("503 5.5.1 Say EHLO first").await;
        }
        if self.sender.is_some() {
            return self
                .reply("503 5.5.1 Sender already given (RSET to start again)")
                .await;
        }
        let Some((path, parameters)) = path_argument(argument, "FROM:") else {
            return self.reply("501 5.5.4 Syntax: MAIL FROM:<address>").await;
        };
        let max = self.state.config.mail.max_bytes;
        let announced = parameters
            .split_whitespace()
            .find_map(|p| p.strip_prefix("SIZE=").or_else(|| p.strip_prefix("size=")))
            .and_then(|n| n.parse::<usize>().ok());
        if announced.is_some_and(|size| size > max) {
            let text = format!("552 5.3.4 Message larger than {max} bytes");
            return self.reply(&text).await;
        }
        if self.messages >= self.guard.limits.messages_per_connection {
            return self
                .reply("421 4.7.0 Too many messages on one connection")
                .await;
        }
        if !self.guard.message(self.ip, &path) {
            tracing::info!(ip = %self.ip, sender = %path, "smtp: rate limited");
            return self
                .reply("450 4.7.1 Too many messages, try again later")
                .await;
        }
        self.sender = Some(path);
        self.reply("250 2.1.0 OK").await
    }

    /// `RCPT TO:<recipient>`: only this installation's live addresses.
    async fn rcpt_to(&mut self, argument: &str) -> Result<(), Ended> {
        if self.sender.is_none() {
            return self.reply("503 5.5.1 MAIL first").await;
        }
        let Some((path, _)) = path_argument(argument, "TO:") else {
            return self.reply("501 5.5.4 Syntax: RCPT TO:<address>").await;
        };
        if self.recipients.len() >= self.guard.limits.recipients_per_message {
            return self.reply("452 4.5.3 Too many recipients").await;
        }
        if self.state.config.mail.token_of(&path).is_none() {
            let text = format!(
                "550 5.7.1 Relaying denied: this server takes mail for @{} only",
                self.domain()
            );
            return self.reply(&text).await;
        }
        match recipient(self.state, &path).await {
            Ok(Some(user)) => {
                self.recipients.push(user);
                self.reply("250 2.1.5 OK").await
            }
            Ok(None) => self.reply("550 5.1.1 No such address").await,
            Err(error) => {
                tracing::warn!(%error, "smtp: recipient could not be checked");
                self.reply("451 4.3.0 Try again later").await
            }
        }
    }

    /// `DATA`: the message, then its delivery.
    async fn data(&mut self) -> Result<(), Ended> {
        if self.recipients.is_empty() {
            return self.reply("503 5.5.1 No valid recipient").await;
        }
        self.reply("354 End data with <CR><LF>.<CR><LF>").await?;
        let max = self.state.config.mail.max_bytes;
        let message = self.message_body(max).await?;
        let recipients = std::mem::take(&mut self.recipients);
        self.reset();
        self.messages += 1;
        let Some(raw) = message else {
            let text = format!("552 5.3.4 Message larger than {max} bytes");
            return self.reply(&text).await;
        };
        match deliver(self.state, &recipients, raw).await {
            Ok(_) => self.reply("250 2.0.0 Delivered").await,
            Err(DeliverError::Unreadable(error)) => {
                let text = format!("554 5.6.0 Not delivered: {error}");
                self.reply(&text).await
            }
            Err(error) => {
                tracing::warn!(%error, "smtp: delivery failed");
                self.reply("451 4.3.0 Try again later").await
            }
        }
    }

    /// The message's lines up to the lone `.`, dot-unstuffed; `None` when it is larger than
    /// `max` (the rest is read and dropped, so that the conversation can go on).
    async fn message_body(&mut self, max: usize) -> Result<Option<Vec<u8>>, Ended> {
        let mut message = Vec::new();
        let mut too_large = false;
        let mut line = Vec::new();
        loop {
            line.clear();
            let timeout = self.guard.limits.idle_timeout;
            let read = tokio::time::timeout(timeout, self.reader.read_until(b'\n', &mut line))
                .await
                .map_err(|_| Ended::Idle)??;
            if read == 0 {
                return Err(Ended::Closed);
            }
            if line == b".\r\n" || line == b".\n" {
                break;
            }
            let content = line.strip_prefix(b".").unwrap_or(&line);
            if message.len() + content.len() > max {
                too_large = true;
                message = Vec::new();
            }
            if !too_large {
                message.extend_from_slice(content);
            }
        }
        Ok((!too_large).then_some(message))
    }

    /// The next command line, without its line end.
    async fn command_line(&mut self) -> Result<String, Ended> {
        let mut line = Vec::new();
        let timeout = self.guard.limits.idle_timeout;
        let limited = (&mut self.reader).take(MAX_COMMAND_LINE);
        let mut limited = limited;
        let read = tokio::time::timeout(timeout, limited.read_until(b'\n', &mut line))
            .await
            .map_err(|_| Ended::Idle)??;
        if read == 0 {
            return Err(Ended::Closed);
        }
        if !line.ends_with(b"\n") {
            // Drop the rest of the long line.
            let mut rest = Vec::new();
            let _ = tokio::time::timeout(timeout, self.reader.read_until(b'\n', &mut rest)).await;
            return Err(Ended::LongLine);
        }
        Ok(String::from_utf8_lossy(&line).trim_end().to_string())
    }
}

/// The address of `FROM:<address> parameters` (or `TO:…`), without its brackets, and the
/// parameters after it; `None` when the argument does not start with `keyword`.
fn path_argument<'a>(argument: &'a str, keyword: &str) -> Option<(String, &'a str)> {
    let prefix = argument.get(..keyword.len())?;
    if !prefix.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = argument[keyword.len()..].trim_start();
    let (path, parameters) = match rest.strip_prefix('<') {
        Some(inner) => {
            let end = inner.find('>')?;
            (&inner[..end], &inner[end + 1..])
        }
        None => match rest.split_once(' ') {
            Some((path, parameters)) => (path, parameters),
            None => (rest, ""),
        },
    };
    Some((path.trim().to_string(), parameters.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_mail_and_rcpt() {
        assert_eq!(
            path_argument("FROM:<a@b.example> SIZE=100", "FROM:"),
            Some(("a@b.example".into(), "SIZE=100"))
        );
        assert_eq!(path_argument("to: <x@y>", "TO:"), Some(("x@y".into(), "")));
        assert_eq!(path_argument("FROM:<>", "FROM:"), Some((String::new(), "")));
        assert_eq!(path_argument("FROM:<unclosed", "FROM:"), None);
        assert_eq!(path_argument("TO:<x>", "FROM:"), None);
        assert_eq!(path_argument("", "FROM:"), None);
    }

    #[test]
    fn message_limits_per_address_and_sender() {
        let guard = Guard::new(SmtpLimits {
            messages_per_minute_per_ip: 3,
            messages_per_minute_per_sender: 2,
            connections_per_ip: 1,
            ..SmtpLimits::default()
        });
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(guard.message(a, "x@example.com"));
        assert!(guard.message(a, "X@example.com"));
        assert!(!guard.message(b, "x@example.com"), "the sender's limit");
        assert!(guard.message(a, "y@example.com"));
        assert!(!guard.message(a, "z@example.com"), "the address's limit");
        let slot = guard.connection(a);
        assert!(slot.is_some());
        assert!(guard.connection(a).is_none());
        drop(slot);
        assert!(guard.connection(a).is_some());
    }
}
