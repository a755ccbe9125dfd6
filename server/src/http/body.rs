//! Response bodies: a whole JSON answer, or a Server-Sent Events stream
//! fed by a session's route (one `event: message` per JSON-RPC message,
//! ended after the answer). In a session that keeps events for a resume,
//! every event carries its `id`, and the stream opens with a priming
//! event (an id, no data) so that a client has an id to resume from
//! before the first message.

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
    /// The priming event's id, sent first.
    prime: Option<String>,
    /// The first message, already taken off the channel.
    first: Option<Msg>,
    rx: mpsc::Receiver<Msg>,
    done: bool,
    _guard: Option<RouteGuard>,
}

impl SseBody {
    /// A stream of the priming event `prime`, `first`, and then what `rx`
    /// receives.
    pub fn new(
        prime: Option<String>,
        first: Option<Msg>,
        rx: mpsc::Receiver<Msg>,
        guard: Option<RouteGuard>,
    ) -> Self {
        SseBody {
            prime,
            first,
            rx,
            done: false,
            _guard: guard,
        }
    }
}

/// One SSE event carrying `json` (a JSON line holds no newline), with
/// its id when it has one.
fn event(msg: &Msg) -> Bytes {
    let json = &msg.json;
    Bytes::from(match &msg.id {
        Some(id) => format!("id: {id}\nevent: message\ndata: {json}\n\n"),
        None => format!("event: message\ndata: {json}\n\n"),
    })
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
        if let Some(id) = self.prime.take() {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(format!(
                "id: {id}\ndata: \n\n"
            ))))));
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
        Poll::Ready(Some(Ok(Frame::data(event(&msg)))))
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
