//! Response bodies: a whole JSON answer, or a Server-Sent Events stream
//! fed by a session's route (one `event: message` per JSON-RPC message,
//! ended after the answer).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use tokio::sync::mpsc;

use super::conn::{Msg, RouteGuard};

/// Any body the endpoint answers with.
#[derive(Debug)]
pub enum Out {
    /// A body known in full.
    Full(Full<Bytes>),
    /// An SSE stream.
    Sse(SseBody),
}

impl Out {
    /// A body of `text`.
    pub fn text(text: impl Into<Bytes>) -> Out {
        Out::Full(Full::new(text.into()))
    }

    /// No body.
    pub fn empty() -> Out {
        Out::Full(Full::new(Bytes::new()))
    }
}

/// An SSE stream: what its receiver gets, written as events. The guard
/// (when it carries a request) cancels the call if the client goes first.
#[derive(Debug)]
pub struct SseBody {
    /// The first message, already taken off the channel.
    first: Option<Msg>,
    rx: mpsc::Receiver<Msg>,
    done: bool,
    _guard: Option<RouteGuard>,
}

impl SseBody {
    /// A stream of `first` and then what `rx` receives.
    pub fn new(first: Option<Msg>, rx: mpsc::Receiver<Msg>, guard: Option<RouteGuard>) -> Self {
        SseBody {
            first,
            rx,
            done: false,
            _guard: guard,
        }
    }
}

/// One SSE event carrying `json` (a JSON line holds no newline).
fn event(json: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let msg = match self.first.take() {
            Some(msg) => msg,
            None => match self.rx.poll_recv(cx) {
                Poll::Ready(Some(msg)) => msg,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            },
        };
        self.done = msg.last;
        Poll::Ready(Some(Ok(Frame::data(event(&msg.json)))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Body for Out {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Out::Full(body) => Pin::new(body).poll_frame(cx),
            Out::Sse(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Out::Full(body) => body.is_end_stream(),
            Out::Sse(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Out::Full(body) => body.size_hint(),
            Out::Sse(_) => SizeHint::default(),
        }
    }
}
