//! The HTTP request path on arbitrary bytes: the server's parser and session state machine
//! (`ServerSession`), fed the input split at arbitrary points, and the client's response
//! framer fed the same bytes. Run with `cargo +nightly fuzz run http_request` from the repo.
//!
//! Input layout: the first byte says how many cut sizes follow (up to 15), each one byte; the
//! rest is the stream. Properties: no panic (the session's own asserts included: its held
//! bytes stay bounded, nothing is answered after a closing response); the answer is the same
//! however the stream is cut; no `200 OK` is owed for a request whose head did not end; the
//! framer makes progress on every piece until it refuses the stream.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ringside::protocols::http::{heads_ended, reply_to_pieces, ResponseFramer};

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = usize::from(count % 16).min(rest.len());
    let (cut_bytes, stream) = rest.split_at(count);
    let cuts: Vec<usize> = cut_bytes.iter().map(|&cut| usize::from(cut) + 1).collect();

    let whole = reply_to_pieces(stream, &[]);
    assert_eq!(reply_to_pieces(stream, &cuts), whole, "the answer depends on the cuts");
    assert!(whole.ok <= heads_ended(stream), "an answer for a request never received");

    let mut framer = ResponseFramer::default();
    let mut pieces = stream;
    for &cut in cuts.iter().chain(std::iter::repeat(&usize::MAX)) {
        if pieces.is_empty() {
            break;
        }
        let (mut piece, later) = pieces.split_at(cut.min(pieces.len()));
        pieces = later;
        while !piece.is_empty() {
            match framer.feed(piece) {
                Ok((used, done)) => {
                    assert!(used > 0 || done.is_some(), "the framer made no progress");
                    piece = &piece[used..];
                }
                Err(_) => return,
            }
        }
    }
});
