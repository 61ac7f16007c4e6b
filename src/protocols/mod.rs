//! The protocols, sans I/O: what a server sends back for the bytes it received (`Proto`), and
//! how a client knows the bytes it got back are the right ones (`echo.rs`: the patterns echo
//! clients send and check; `http.rs`: request parsing, prebuilt responses, response framing).
//!
//! Servers are written once per I/O API and take a `Proto`, so the HTTP server is a variant
//! here, not a new set of event loops. `Proto` is an enum, not a trait object, because it sits
//! on every message's path.

pub mod echo;
pub mod http;
pub mod work;

use http::{Responses, ServerSession};
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
    /// The input is consumed (the session keeps what it still needs); send these responses,
    /// which live in `Responses`, then close if one of them is a closing one.
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
        let responses = Box::leak(Box::new(Responses::new(body_bytes)));
        Proto {
            speaks: Speaks::Http(responses),
            work: Work::default(),
        }
    }

    /// This protocol doing `work` on every request's bytes before it answers.
    pub fn with_work(self, work: Work) -> Proto {
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
    /// after the server's work on them (`--work`): every engine's loop comes here, so the work
    /// is the same in each.
    #[inline]
    pub fn reply(self, session: &mut ServerSession, input: &[u8]) -> Reply {
        debug_assert!(!input.is_empty());
        self.work.spend(input);
        match self.speaks {
            Speaks::Echo => Reply::Input,
            Speaks::Http(_) => Reply::Http(session.on_input(input)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_replies_with_the_input() {
        let mut session = ServerSession::default();
        assert_eq!(Proto::echo().reply(&mut session, b"x"), Reply::Input);
    }
}
