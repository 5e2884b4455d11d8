//! A deadline on every request body (issue 31): a client that sends its body slowly (a few
//! bytes now and then, as slowloris clients do) gets an error once [`BODY_READ_TIMEOUT`] has
//! passed since its request's head arrived, instead of keeping the request, and whatever the
//! handler waits with, for as long as it likes. The server wraps every request's body in
//! [`DeadlineBody`] before routing, so no route can forget it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};

/// How long a client has to send a request's whole body, from the moment its head arrived.
/// The largest body read (16 MiB, see `receive_large_bodies`) then needs about 280 kB/s; the
/// 5 MB OPML import, 85 kB/s.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The error a body gives once its deadline has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimedOut {
    /// The deadline, in seconds from the request's head.
    pub seconds: u64,
}

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} seconds",
            self.seconds
        )
    }
}

impl std::error::Error for BodyTimedOut {}

/// The deadline that passed, when an error (of a body, or an extractor's rejection that
/// wraps one) is, or was caused by, a body's deadline passing.
pub fn body_timeout_of(error: &(dyn std::error::Error + 'static)) -> Option<BodyTimedOut> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(timed_out) = error.downcast_ref::<BodyTimedOut>() {
            return Some(*timed_out);
        }
        current = error.source();
    }
    None
}

/// A request body that fails with [`BodyTimedOut`] when it has not ended by its deadline.
pub struct DeadlineBody<B> {
    inner: B,
    deadline: Pin<Box<tokio::time::Sleep>>,
    seconds: u64,
}

impl<B> DeadlineBody<B> {
    /// `inner`, which must end within `timeout` from now.
    pub fn new(inner: B, timeout: Duration) -> DeadlineBody<B> {
        DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            seconds: timeout.as_secs(),
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|result| result.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            let seconds = self.seconds;
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut { seconds }))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    /// A body that gives one byte, then nothing ever again.
    struct Drip(bool);

    impl Body for Drip {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            if self.0 {
                return Poll::Pending;
            }
            self.0 = true;
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
        }
    }

    #[tokio::test]
    async fn a_body_that_stalls_fails_at_its_deadline() {
        let body = DeadlineBody::new(Drip(false), Duration::from_millis(1200));
        let started = std::time::Instant::now();
        let error = axum::body::to_bytes(axum::body::Body::new(body), 1024)
            .await
            .unwrap_err();
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(1200), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert_eq!(body_timeout_of(&error), Some(BodyTimedOut { seconds: 1 }));
        assert!(error.to_string().contains("within 1 seconds"), "{error}");
    }

    #[tokio::test]
    async fn a_whole_body_passes() {
        let body = DeadlineBody::new(axum::body::Body::from("hello"), Duration::from_secs(3));
        let bytes = axum::body::to_bytes(axum::body::Body::new(body), 1024)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"hello");
    }
}
