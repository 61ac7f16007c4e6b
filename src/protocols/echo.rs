//! The echo protocol's bytes: the patterns a client sends and checks. An echo server sends back
//! what it received (`Proto::Echo`); these make sure what comes back is what was sent.

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
