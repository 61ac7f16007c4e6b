//! The protocols, sans I/O: what a server sends back for the bytes it received (`Proto`), and
//! how a client knows the bytes it got back are the right ones (`echo.rs`: the patterns echo
//! clients send and check; `http.rs`: request parsing, prebuilt responses, response framing).
//!
//! Servers are written once per I/O API and take a `Proto`, so the HTTP server is a variant
//! here, not a new set of event loops. `Proto` is an enum, not a trait object, because it sits
//! on every message's path.

pub mod echo;
pub mod http;
pub mod prebuilt;
pub mod work;

use http::{Responses, ServerSession, SliceOf};
use work::Work;

/// The protocol a server speaks, and the work it does per request.
#[derive(Clone, Copy, Debug)]
pub struct Proto {
    pub speaks: Speaks,
    pub work: Work,
}

/// What a server answers.
#[derive(Clone, Copy, Debug)]
pub enum Speaks {
    /// Every byte received is sent back, in order.
    Echo,
    /// HTTP/1.1 with a fixed response. The responses are built once per server process and
    /// live as long as it does (hence `'static`: every engine, and every thread of `threads`,
    /// sends from the same bytes without a reference count on the hot path).
    Http(&'static Responses),
}

/// What a server loop does with bytes it has just received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Send exactly the received bytes back. The loop may send straight from its receive
    /// buffer (io_uring sends from the provided buffer itself; no copy).
    Input,
    /// The input is consumed (the session keeps what it still needs); the responses owed went
    /// to the sink as slices of `Responses`, in order: send them, then close if one of them is
    /// a closing one.
    Http(http::Reply),
}

impl Proto {
    /// The echo protocol, with no work.
    pub fn echo() -> Proto {
        Proto {
            speaks: Speaks::Echo,
            work: Work::default(),
        }
    }

    /// The HTTP protocol serving `body_bytes`-byte bodies (the default body when None).
    pub fn http(body_bytes: Option<usize>) -> Proto {
        // One leak per server process: the responses must outlive every connection.
        let responses: &'static Responses = Box::leak(Box::new(Responses::new(body_bytes)));
        responses.keep_dates_fresh();
        Proto {
            speaks: Speaks::Http(responses),
            work: Work::default(),
        }
    }

    /// This protocol doing `work` per request before it answers: HTTP per request parsed,
    /// echo (no framing) by the byte, so echo's work must know its message size
    /// (`Work::per_message_of`).
    pub fn with_work(self, work: Work) -> Proto {
        assert!(
            matches!(self.speaks, Speaks::Http(_)) || work.charges_bytes(),
            "echo's work is charged per message: give it the message size"
        );
        Proto { work, ..self }
    }

    pub fn name(self) -> &'static str {
        match self.speaks {
            Speaks::Echo => "echo",
            Speaks::Http(_) => "http",
        }
    }

    /// The reply to `input`, the bytes one receive returned on the connection whose state is
    /// `session` (never empty: an empty receive is the peer closing, which the loop handles),
    /// after the server's work (`--work`): every engine's loop comes here, so the work is the
    /// same in each. HTTP's answers go to `answer`, slice by slice, in order. The work is the
    /// requests', not the receive's: echo pays `input`'s share of messages, HTTP each request
    /// the session parsed (a pipelined receive pays several, a receive that ends no request
    /// nothing).
    #[inline]
    pub fn reply(
        self,
        session: &mut ServerSession,
        input: &[u8],
        answer: &mut impl FnMut(SliceOf),
    ) -> Reply {
        debug_assert!(!input.is_empty());
        match self.speaks {
            Speaks::Echo => {
                self.work.on_bytes(input);
                Reply::Input
            }
            Speaks::Http(_) => {
                let reply = session.on_input(input, answer);
                self.work.on_requests(requests_parsed(reply), input);
                Reply::Http(reply)
            }
        }
    }

    /// The HTTP responses, for the engines that send from them.
    pub fn responses(self) -> Option<&'static Responses> {
        match self.speaks {
            Speaks::Echo => None,
            Speaks::Http(responses) => Some(responses),
        }
    }
}

/// The requests a reply answers: its `200 OK`s and a closing `200 OK` (a request that asked to
/// close); a refusal (`400`, `417`, `431`) answers bytes that were no request it serves.
fn requests_parsed(reply: http::Reply) -> u32 {
    let closing_ok = matches!(
        reply.closing,
        Some(http::Closing::Ok | http::Closing::OkHead)
    );
    reply.ok + u32::from(closing_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_replies_with_the_input() {
        let mut session = ServerSession::default();
        let reply = Proto::echo().reply(&mut session, b"x", &mut |_| unreachable!());
        assert_eq!(reply, Reply::Input);
    }

    /// HTTP's work is per request parsed: each pipelined request, the one that closes, none
    /// for a piece that ends no request or for a refusal.
    #[test]
    fn http_work_counts_the_requests_parsed() {
        let mut session = ServerSession::default();
        let parsed = |session: &mut ServerSession, input: &[u8]| {
            requests_parsed(session.on_input(input, &mut |_| {}))
        };
        let get = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        let three = get.repeat(3);
        assert_eq!(parsed(&mut session, &three[..40]), 1);
        assert_eq!(parsed(&mut session, &three[40..]), 2);
        assert_eq!(parsed(&mut session, &get[..5]), 0);
        let close = b" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
        assert_eq!(parsed(&mut session, close), 1);
        let mut refused = ServerSession::default();
        assert_eq!(parsed(&mut refused, b"nonsense\r\n\r\n"), 0);
    }

    /// Echo's work must know its message size; no work needs none.
    #[test]
    #[should_panic(expected = "charged per message")]
    fn echo_work_without_a_message_size_is_refused() {
        Proto::echo().with_work(Work::calibrated(std::time::Duration::from_micros(1)));
    }

    #[test]
    fn echo_without_work_needs_no_message_size() {
        Proto::echo().with_work(Work::calibrated(std::time::Duration::ZERO));
    }
}
