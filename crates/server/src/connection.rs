//! What the server does with a connection's bytes before the HTTP library reads them: a
//! request line whose target is over [`MAX_URI_BYTES`] is answered 414 as soon as that much of
//! it has arrived, without waiting for the rest of the head.
//!
//! The HTTP library answers only once a head is complete, and some clients never complete
//! one: curl, given a cookie file and a URL over 8 KiB, sends `Cookie: ` and stops, so a URL
//! that got its 414 at once without a cookie hung until the head deadline (10 s) and then got
//! no answer at all with one (issue 31). Only the first request of a connection is looked at:
//! past it, where a body ends and the next head begins is the HTTP library's to know, and a
//! later over-long head still gets its 414 from [`crate::middleware`] once it is complete.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::middleware::{CONTENT_SECURITY_POLICY, MAX_URI_BYTES};

/// `" HTTP/1.1"`: what follows the target on a request line.
const VERSION_BYTES: usize = 9;

/// A connection whose first request line is checked as it arrives.
pub struct HeadGuard<S> {
    inner: S,
    state: GuardState,
}

enum GuardState {
    /// Reading the first request line: `seen` bytes of it so far, the method's length once
    /// its space has come.
    FirstLine { seen: usize, method: Option<usize> },
    /// The first line ended within the limit: bytes pass untouched.
    Passing,
    /// The line is too long: the refusal is being written, `written` bytes of it so far.
    Refusing { answer: Vec<u8>, written: usize },
    /// Refused: reading ends (the HTTP library sees the connection close).
    Refused,
}

impl<S> HeadGuard<S> {
    /// `inner`, guarded.
    pub fn new(inner: S) -> HeadGuard<S> {
        HeadGuard {
            inner,
            state: GuardState::FirstLine {
                seen: 0,
                method: None,
            },
        }
    }
}

/// The 414 answer written straight to the connection: the API's JSON error and the headers
/// every answer carries.
fn refusal() -> Vec<u8> {
    let body = serde_json::json!({"error": {
        "code": "uri_too_long",
        "message": format!("The URL is longer than {MAX_URI_BYTES} bytes, the most accepted."),
        "category": "limit",
        "action": "Send long values in a request body instead of the URL.",
    }})
    .to_string();
    format!(
        "HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n\
         content-length: {}\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\n\
         referrer-policy: no-referrer\r\nx-frame-options: DENY\r\n\
         content-security-policy: {CONTENT_SECURITY_POLICY}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// What the bytes `new` of the first line (after `seen` of it) tell: `Some(true)` when the
/// target is over the limit, `Some(false)` when the line ended within it, `None` when it goes
/// on within it. Updates `seen` and `method`.
fn check_line(seen: &mut usize, method: &mut Option<usize>, new: &[u8]) -> Option<bool> {
    if method.is_none()
        && let Some(space) = new.iter().position(|&b| b == b' ')
    {
        *method = Some(*seen + space);
    }
    let end = new.iter().position(|&b| b == b'\n');
    *seen += end.unwrap_or(new.len());
    // Method, space, target, version, and the CR before the LF.
    let longest = method.unwrap_or(0) + 1 + MAX_URI_BYTES + VERSION_BYTES + 1;
    if *seen > longest {
        return Some(true);
    }
    end.map(|_| false)
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for HeadGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            match &mut this.state {
                GuardState::Passing => return Pin::new(&mut this.inner).poll_read(cx, buf),
                GuardState::Refused => return Poll::Ready(Ok(())),
                GuardState::Refusing { answer, written } => {
                    while *written < answer.len() {
                        let n =
                            ready!(Pin::new(&mut this.inner).poll_write(cx, &answer[*written..]))?;
                        if n == 0 {
                            break;
                        }
                        *written += n;
                    }
                    // A client gone meanwhile has nothing more to be told.
                    let _ = ready!(Pin::new(&mut this.inner).poll_shutdown(cx));
                    this.state = GuardState::Refused;
                }
                GuardState::FirstLine { seen, method } => {
                    let before = buf.filled().len();
                    ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                    let new = &buf.filled()[before..];
                    if new.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                    match check_line(seen, method, new) {
                        None => return Poll::Ready(Ok(())),
                        Some(false) => {
                            this.state = GuardState::Passing;
                            return Poll::Ready(Ok(()));
                        }
                        Some(true) => {
                            buf.set_filled(before);
                            this.state = GuardState::Refusing {
                                answer: refusal(),
                                written: 0,
                            };
                        }
                    }
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeadGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(parts: &[&[u8]]) -> Option<bool> {
        let (mut seen, mut method) = (0, None);
        let mut answer = None;
        for part in parts {
            answer = check_line(&mut seen, &mut method, part);
            if answer.is_some() {
                break;
            }
        }
        answer
    }

    #[test]
    fn only_targets_over_the_limit_are_refused() {
        let at_limit = format!("GET /{} HTTP/1.1\r\n", "a".repeat(MAX_URI_BYTES - 1));
        assert_eq!(check(&[at_limit.as_bytes()]), Some(false));
        let over = format!("GET /{} HTTP/1.1\r\n", "a".repeat(MAX_URI_BYTES));
        assert_eq!(check(&[over.as_bytes()]), Some(true));
        // In pieces, and refused before the line ends.
        let start = format!("DELETE /{}", "a".repeat(6000));
        let more = "a".repeat(3000);
        assert_eq!(check(&[start.as_bytes(), more.as_bytes()]), Some(true));
        assert_eq!(check(&[b"GET /short HTTP/1.1\r\nHost: x\r\n"]), Some(false));
        assert_eq!(check(&[b"GET /sho", b"rt"]), None);
    }
}
