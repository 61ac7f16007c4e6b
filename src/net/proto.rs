//! The protocol seam: what a server sends back for the bytes it received, and how a client
//! knows the bytes it got back are the ones it sent.
//!
//! Servers are written once per I/O API and take a `Proto`, so the HTTP server of a later issue
//! is a new variant here (parse with httparse, append a response to the connection's output,
//! say how many input bytes it consumed), not a new set of event loops. `Proto` is an enum, not
//! a trait object, because it sits on every message's path.

/// The protocol a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Every byte received is sent back, in order.
    Echo,
}

/// What a server loop does with bytes it has just received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Send exactly the received bytes back. The loop may send straight from its receive
    /// buffer (io_uring sends from the provided buffer itself; no copy).
    Input,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Echo => "echo",
        }
    }

    /// The reply to `input`, the bytes one receive returned (never empty: an empty receive is
    /// the peer closing, which the loop handles).
    #[inline]
    pub fn reply(self, input: &[u8]) -> Reply {
        debug_assert!(!input.is_empty());
        match self {
            Proto::Echo => Reply::Input,
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
        assert_eq!(Proto::Echo.reply(b"x"), Reply::Input);
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
