//! What a server's `user_data` carries: the operation a completion belongs to, and the
//! connection it was issued for (slab slot and generation), so a completion that outlives its
//! connection, whose slot a new connection took meanwhile, is recognised and dropped.

/// The operation a completion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Accept = 1,
    Recv = 2,
    Send = 3,
    Cancel = 4,
    Hangup = 5,
    /// The stop pipe became readable (Ctrl-C): the loop's condition sees the flag.
    Stop = 6,
    /// A direct descriptor's slot freed.
    Close = 7,
    /// The FIN behind a direct descriptor's last response.
    Shutdown = 8,
    /// The timeout linked to a one-shot recv (`--idle-timeout`).
    Timeout = 9,
    /// The idle clock's periodic tick (`--idle-timeout` on the multishot servers).
    Tick = 10,
}

/// The op kind in the top byte, the connection's generation in the next 24 bits, its slab slot
/// in the low 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub op: Op,
    pub generation: u32,
    pub slot: u32,
}

/// Generations wrap at 24 bits; a slot reused 16 million times between two completions of one
/// connection is the only way to confuse them.
pub const GENERATION_MASK: u32 = (1 << 24) - 1;

impl Token {
    pub fn encode(self) -> u64 {
        debug_assert!(self.generation <= GENERATION_MASK);
        (self.op as u64) << 56 | u64::from(self.generation) << 32 | u64::from(self.slot)
    }

    pub fn decode(user_data: u64) -> Option<Token> {
        let op = match (user_data >> 56) as u8 {
            1 => Op::Accept,
            2 => Op::Recv,
            3 => Op::Send,
            4 => Op::Cancel,
            5 => Op::Hangup,
            6 => Op::Stop,
            7 => Op::Close,
            8 => Op::Shutdown,
            9 => Op::Timeout,
            10 => Op::Tick,
            _ => return None,
        };
        Some(Token {
            op,
            generation: (user_data >> 32) as u32 & GENERATION_MASK,
            slot: user_data as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_at_the_edges() {
        for op in [
            Op::Accept,
            Op::Recv,
            Op::Send,
            Op::Cancel,
            Op::Hangup,
            Op::Stop,
            Op::Close,
            Op::Shutdown,
            Op::Timeout,
            Op::Tick,
        ] {
            for (generation, slot) in [(0, 0), (GENERATION_MASK, u32::MAX), (12345, 77)] {
                let token = Token {
                    op,
                    generation,
                    slot,
                };
                assert_eq!(Token::decode(token.encode()), Some(token));
            }
        }
    }

    #[test]
    fn generations_tell_reused_slots_apart() {
        let old = Token {
            op: Op::Recv,
            generation: 1,
            slot: 5,
        };
        let new = Token {
            generation: 2,
            ..old
        };
        assert_ne!(old.encode(), new.encode());
        assert_eq!(Token::decode(0), None, "zero is no token");
    }
}
