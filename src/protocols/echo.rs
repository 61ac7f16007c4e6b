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

/// The 8 bytes of block `block` (bytes `8 * block..8 * block + 8`) of connection
/// `connection`'s stream: splitmix64 of the two.
#[inline]
fn stream_block(connection: u64, block: u64) -> u64 {
    let mut z = (connection << 48 ^ block).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Splits the stretch `offset..offset + len` of a stream into its head (bytes before the first
/// whole block), the whole blocks, and the tail after them, as lengths.
fn stream_parts(offset: u64, len: usize) -> (usize, usize, usize) {
    let head = ((8 - offset % 8) % 8).min(len as u64) as usize;
    let blocks = (len - head) / 8;
    (head, blocks, len - head - blocks * 8)
}

/// Fills `out` with the bytes at `offset..offset + out.len()` of the endless byte stream
/// connection `connection` sends in stream mode. Stateless (each 8-byte block is a hash of its
/// index), so the sender and the checker compute any stretch of it independently, and a
/// stretch that is lost, duplicated or shifted by even one byte fails the check. Whole blocks
/// are written a word at a time: a streaming client fills and checks every byte it moves.
pub fn fill_echo_stream(out: &mut [u8], connection: u64, offset: u64) {
    let (head, blocks, _) = stream_parts(offset, out.len());
    let byte = |position: u64| {
        stream_block(connection, position / 8).to_le_bytes()[(position % 8) as usize]
    };
    for (at, slot) in out[..head].iter_mut().enumerate() {
        *slot = byte(offset + at as u64);
    }
    let first_block = (offset + head as u64) / 8;
    let body = &mut out[head..head + blocks * 8];
    for (index, chunk) in body.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&stream_block(connection, first_block + index as u64).to_le_bytes());
    }
    let tail_start = head + blocks * 8;
    for (at, slot) in out[tail_start..].iter_mut().enumerate() {
        *slot = byte(offset + (tail_start + at) as u64);
    }
}

/// Whether `received` is the stretch of connection `connection`'s stream at `offset`: the
/// offset in `received` of the first byte that differs, compared a word at a time.
pub fn stream_mismatch(received: &[u8], connection: u64, offset: u64) -> Option<usize> {
    let (head, blocks, _) = stream_parts(offset, received.len());
    let byte = |position: u64| {
        stream_block(connection, position / 8).to_le_bytes()[(position % 8) as usize]
    };
    let differs = |at: usize| received[at] != byte(offset + at as u64);
    if let Some(at) = (0..head).find(|&at| differs(at)) {
        return Some(at);
    }
    let first_block = (offset + head as u64) / 8;
    let body = &received[head..head + blocks * 8];
    for (index, chunk) in body.chunks_exact(8).enumerate() {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        if word != stream_block(connection, first_block + index as u64) {
            let at = head + index * 8;
            return (at..at + 8).find(|&at| differs(at));
        }
    }
    (head + blocks * 8..received.len()).find(|&at| differs(at))
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
    fn the_stream_check_finds_the_first_wrong_byte_at_any_alignment() {
        let mut whole = vec![0u8; 300];
        fill_echo_stream(&mut whole, 9, 0);
        for (start, len) in [(0, 300), (3, 5), (5, 200), (8, 16), (299, 1)] {
            let stretch = &whole[start..start + len];
            assert_eq!(
                stream_mismatch(stretch, 9, start as u64),
                None,
                "{start}+{len}"
            );
            assert!(stream_mismatch(stretch, 10, start as u64).is_some());
            for flipped in [0, len / 2, len - 1] {
                let mut bad = stretch.to_vec();
                bad[flipped] ^= 0x20;
                assert_eq!(stream_mismatch(&bad, 9, start as u64), Some(flipped));
            }
        }
        assert!(
            stream_mismatch(&whole[1..101], 9, 0).is_some(),
            "shifted by one byte"
        );
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
