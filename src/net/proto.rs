//! The protocol seam: what a server sends back for the bytes it received, and how a client
//! knows the bytes it got back are the ones it sent.
//!
//! Servers are written once per I/O API and take a `Proto`, so the HTTP server is a variant
//! here (its parsing and responses live in `http.rs`), not a new set of event loops. `Proto` is
//! an enum, not a trait object, because it sits on every message's path.

use super::http::{self, Responses, ServerSession};

/// The protocol a server speaks.
#[derive(Clone, Copy, Debug)]
pub enum Proto {
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
    /// The HTTP protocol serving `body_bytes`-byte bodies (the default body when None).
    pub fn http(body_bytes: Option<usize>) -> Proto {
        // One leak per server process: the responses must outlive every connection.
        Proto::Http(Box::leak(Box::new(Responses::new(body_bytes))))
    }

    pub fn name(self) -> &'static str {
        match self {
            Proto::Echo => "echo",
            Proto::Http(_) => "http",
        }
    }

    /// The reply to `input`, the bytes one receive returned on the connection whose state is
    /// `session` (never empty: an empty receive is the peer closing, which the loop handles).
    #[inline]
    pub fn reply(self, session: &mut ServerSession, input: &[u8]) -> Reply {
        debug_assert!(!input.is_empty());
        match self {
            Proto::Echo => Reply::Input,
            Proto::Http(_) => Reply::Http(session.on_input(input)),
        }
    }

    /// The HTTP responses, for the engines that send from them.
    pub fn responses(self) -> Option<&'static Responses> {
        match self {
            Proto::Echo => None,
            Proto::Http(responses) => Some(responses),
        }
    }
}

/// Fills `message` with the bytes connection `connection` sends as its message number
/// `sequence`. Every message differs from the one before at nearly every byte, and connections
/// differ from each other, so an echo that is reordered, stale, crossed between connections or
/// corrupted fails the comparison.
pub fn fill_echo_message(message: &mut [u8], connection: u64, sequence: u64) {
    let mut state = (connection << 40 ^ sequence).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in message.chunks_mut(8) {
        // xorshift64: cheap enough that filling never shows up next to a syscall.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let bytes = state.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Fills `out` with the bytes at `offset..offset + out.len()` of the endless byte stream
/// connection `connection` sends in stream mode. Stateless (each 8-byte block is a hash of its
/// index), so the sender and the checker compute any stretch of it independently, and a
/// stretch that is lost, duplicated or shifted by even one byte fails the check.
pub fn fill_echo_stream(out: &mut [u8], connection: u64, offset: u64) {
    let block_bytes = |block: u64| -> [u8; 8] {
        // splitmix64 of (connection, block index).
        let mut z = (connection << 48 ^ block).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)).to_le_bytes()
    };
    let mut position = offset;
    let mut filled = 0;
    while filled < out.len() {
        let bytes = block_bytes(position / 8);
        let start = (position % 8) as usize;
        let take = (8 - start).min(out.len() - filled);
        out[filled..filled + take].copy_from_slice(&bytes[start..start + take]);
        filled += take;
        position += take as u64;
    }
}

/// The offset of the first byte where `received` differs from `expected` (equal lengths).
#[inline]
pub fn first_mismatch(expected: &[u8], received: &[u8]) -> Option<usize> {
    debug_assert_eq!(expected.len(), received.len());
    if expected == received {
        return None;
    }
    expected.iter().zip(received).position(|(a, b)| a != b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_replies_with_the_input() {
        let mut session = ServerSession::default();
        assert_eq!(Proto::Echo.reply(&mut session, b"x"), Reply::Input);
    }

    #[test]
    fn consecutive_messages_and_connections_differ_almost_everywhere() {
        let mut first = vec![0u8; 1024];
        let mut second = vec![0u8; 1024];
        let mut other = vec![0u8; 1024];
        fill_echo_message(&mut first, 3, 7);
        fill_echo_message(&mut second, 3, 8);
        fill_echo_message(&mut other, 4, 7);
        let same = |a: &[u8], b: &[u8]| a.iter().zip(b).filter(|(x, y)| x == y).count();
        assert!(same(&first, &second) < 32, "{}", same(&first, &second));
        assert!(same(&first, &other) < 32);
        let mut again = vec![0u8; 1024];
        fill_echo_message(&mut again, 3, 7);
        assert_eq!(first, again, "the pattern is a pure function of its inputs");
    }

    #[test]
    fn odd_lengths_are_filled_to_the_last_byte() {
        let mut message = vec![0u8; 13];
        fill_echo_message(&mut message, 0, 0);
        assert!(message[8..].iter().any(|&b| b != 0));
    }

    #[test]
    fn any_stretch_of_a_stream_matches_the_whole() {
        let mut whole = vec![0u8; 1000];
        fill_echo_stream(&mut whole, 5, 0);
        for (start, len) in [(0, 1), (3, 13), (7, 1), (8, 8), (499, 501)] {
            let mut part = vec![0u8; len];
            fill_echo_stream(&mut part, 5, start as u64);
            assert_eq!(part, whole[start..start + len], "at {start} len {len}");
        }
        let mut shifted = vec![0u8; 999];
        fill_echo_stream(&mut shifted, 5, 1);
        assert!(first_mismatch(&whole[..999], &shifted).is_some());
        let mut other = vec![0u8; 1000];
        fill_echo_stream(&mut other, 6, 0);
        assert!(first_mismatch(&whole, &other).is_some());
    }

    #[test]
    fn mismatch_names_the_first_flipped_byte() {
        let mut expected = vec![0u8; 64];
        fill_echo_message(&mut expected, 1, 1);
        let mut received = expected.clone();
        assert_eq!(first_mismatch(&expected, &received), None);
        received[41] ^= 0x01;
        received[50] ^= 0x80;
        assert_eq!(first_mismatch(&expected, &received), Some(41));
    }
}
