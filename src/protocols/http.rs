//! HTTP/1.1 as a fixed-response protocol, sans I/O: the server's request parser and canned
//! responses, and the client's response framer. Seed 001's servers answered one fixed response
//! per read without parsing anything (pipelined requests got one answer, garbage got a 200,
//! `Connection: close` was ignored); these do it properly, with `httparse` for every head, and
//! leave the event loops to the engines, which know nothing of HTTP.
//!
//! Server side: a `ServerSession` per connection keeps the part of a request that has arrived
//! so far (never more than `HEAD_BYTES_MAX` plus one read) and turns each read into a `Reply`:
//! how many `200 OK`s to send, and which closing response, if any, ends the connection. Every
//! response is prebuilt once per server in `Responses`, so answering costs no formatting and
//! the uring engines send straight from it.
//!
//! Client side: `ResponseFramer` finds where each response ends in a byte stream however it is
//! split (head parsed by httparse, then `Content-Length` bytes of body), so the load generator
//! verifies every response rather than trusting that one read is one response.

use std::fmt;

/// Request heads larger than this get `431` and a close (nginx's default buffer is the same).
pub const HEAD_BYTES_MAX: usize = 8 * 1024;
/// Headers a request may carry; more is treated as too large (431).
const HEADERS_MAX: usize = 64;
/// `200 OK`s prebuilt back to back, so that up to this many pipelined answers go out as one
/// contiguous slice (one send) without copying.
pub const OK_BATCH: usize = 16;
/// The body served when `--body-size` is not given.
pub const BODY_DEFAULT: &[u8] = b"Hello, World!";

/// A response that ends its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closing {
    /// `200 OK` with `Connection: close`: the client asked to close, or spoke HTTP/1.0 without
    /// keep-alive.
    Ok,
    /// `400 Bad Request`: not HTTP, or a request this server does not take (chunked bodies).
    BadRequest,
    /// `431 Request Header Fields Too Large`: a head over `HEAD_BYTES_MAX`.
    HeadTooLarge,
}

/// What to send for one read's worth of requests, in order: `ok` plain `200 OK`s, then the
/// closing response if there is one (after which the connection closes once it is sent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub ok: u32,
    pub closing: Option<Closing>,
}

impl Reply {
    pub fn is_empty(&self) -> bool {
        self.ok == 0 && self.closing.is_none()
    }
}

/// The server's responses, built once when it starts.
pub struct Responses {
    /// One `200 OK` response, `OK_BATCH` times back to back.
    ok_batch: Box<[u8]>,
    ok_bytes: usize,
    ok_close: Box<[u8]>,
    bad_request: Box<[u8]>,
    head_too_large: Box<[u8]>,
}

impl fmt::Debug for Responses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Responses {{ ok_bytes: {} }}", self.ok_bytes)
    }
}

impl Responses {
    /// Responses whose `200 OK` carries `body_bytes` bytes (the default body when None).
    pub fn new(body_bytes: Option<usize>) -> Responses {
        let body: Vec<u8> = match body_bytes {
            None => BODY_DEFAULT.to_vec(),
            // A repeating alphabet, so a client that checks lengths also sees real bytes.
            Some(len) => (0..len).map(|i| b'a' + (i % 26) as u8).collect(),
        };
        let response = |status: &str, close: bool, body: &[u8]| -> Vec<u8> {
            let connection = if close { "Connection: close\r\n" } else { "" };
            let mut bytes = format!(
                "HTTP/1.1 {status}\r\nServer: ringside\r\nContent-Type: text/plain\r\n\
                 Content-Length: {}\r\n{connection}\r\n",
                body.len()
            )
            .into_bytes();
            bytes.extend_from_slice(body);
            bytes
        };
        let ok = response("200 OK", false, &body);
        Responses {
            ok_bytes: ok.len(),
            ok_batch: ok.repeat(OK_BATCH).into_boxed_slice(),
            ok_close: response("200 OK", true, &body).into_boxed_slice(),
            bad_request: response("400 Bad Request", true, b"").into_boxed_slice(),
            head_too_large: response("431 Request Header Fields Too Large", true, b"")
                .into_boxed_slice(),
        }
    }

    /// `count` (1..=OK_BATCH) plain `200 OK`s as one slice.
    pub fn ok(&self, count: usize) -> &[u8] {
        debug_assert!((1..=OK_BATCH).contains(&count));
        &self.ok_batch[..self.ok_bytes * count]
    }

    pub fn closing(&self, closing: Closing) -> &[u8] {
        match closing {
            Closing::Ok => &self.ok_close,
            Closing::BadRequest => &self.bad_request,
            Closing::HeadTooLarge => &self.head_too_large,
        }
    }

    /// The bytes of `reply` as one slice when they already are one (no copy); None when they
    /// must be assembled (more than `OK_BATCH` answers, or answers followed by a closing one).
    pub fn contiguous(&self, reply: Reply) -> Option<&[u8]> {
        match (reply.ok as usize, reply.closing) {
            (0, Some(closing)) => Some(self.closing(closing)),
            (count, None) if (1..=OK_BATCH).contains(&count) => Some(self.ok(count)),
            _ => None,
        }
    }

    /// Appends the bytes of `reply` to `out`, in order.
    pub fn write(&self, reply: Reply, out: &mut Vec<u8>) {
        let mut left = reply.ok as usize;
        while left > 0 {
            let count = left.min(OK_BATCH);
            out.extend_from_slice(self.ok(count));
            left -= count;
        }
        if let Some(closing) = reply.closing {
            out.extend_from_slice(self.closing(closing));
        }
    }

    /// The slices of `reply`, in order, each at most `OK_BATCH` answers (for engines that send
    /// one slice at a time from this memory).
    pub fn for_each_slice(&self, reply: Reply, mut slice: impl FnMut(SliceOf)) {
        let mut left = reply.ok as usize;
        while left > 0 {
            let count = left.min(OK_BATCH);
            slice(SliceOf::Ok(count as u32));
            left -= count;
        }
        if let Some(closing) = reply.closing {
            slice(SliceOf::Closing(closing));
        }
    }

    /// The memory every response lives in, one slice per prebuilt response (to register it
    /// with a ring).
    pub fn memory(&self) -> [&[u8]; 4] {
        [
            &self.ok_batch,
            &self.ok_close,
            &self.bad_request,
            &self.head_too_large,
        ]
    }

    pub fn slice(&self, of: SliceOf) -> &[u8] {
        match of {
            SliceOf::Ok(count) => self.ok(count as usize),
            SliceOf::Closing(closing) => self.closing(closing),
        }
    }
}

/// Names a slice of `Responses` without borrowing it, so an engine can queue it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceOf {
    Ok(u32),
    Closing(Closing),
}

/// One connection's request parsing state.
#[derive(Debug, Default)]
pub struct ServerSession {
    /// The start of a request whose head has not all arrived.
    partial: Vec<u8>,
    /// Body bytes of the current request still to arrive (and be skipped).
    body_left: u64,
    /// A closing response was decided: everything after it is ignored.
    done: bool,
}

impl ServerSession {
    /// The responses owed for `input`, the bytes of one read.
    pub fn on_input(&mut self, input: &[u8]) -> Reply {
        if self.done {
            return Reply::default();
        }
        let reply = if self.partial.is_empty() {
            let (consumed, reply) = parse_requests(input, &mut self.body_left);
            if reply.closing.is_none() {
                self.partial.extend_from_slice(&input[consumed..]);
            }
            reply
        } else {
            self.partial.extend_from_slice(input);
            let (consumed, reply) = parse_requests(&self.partial, &mut self.body_left);
            self.partial.drain(..consumed);
            reply
        };
        if reply.closing.is_some() {
            self.done = true;
            self.partial = Vec::new();
        }
        debug_assert!(self.partial.len() <= HEAD_BYTES_MAX);
        reply
    }
}

/// What a session answers to `input` arriving in pieces of the sizes in `cuts` (each at least
/// one byte; the rest in one piece once they run out), as a server does however TCP splits the
/// bytes: the `200 OK`s of every piece, and the first closing response. The fuzz target and
/// the tests hold it to two properties: the answer does not depend on the cuts, and no answer
/// is owed for a request whose head did not end (`heads_ended`).
pub fn reply_to_pieces(input: &[u8], cuts: &[usize]) -> Reply {
    let mut session = ServerSession::default();
    let mut total = Reply::default();
    let mut rest = input;
    let mut cut = cuts.iter();
    while !rest.is_empty() {
        let len = cut
            .next()
            .map_or(rest.len(), |&len| len.clamp(1, rest.len()));
        let reply = session.on_input(&rest[..len]);
        assert!(session.partial.len() <= HEAD_BYTES_MAX);
        assert!(
            total.closing.is_none() || reply.is_empty(),
            "an answer after the close"
        );
        total.ok += reply.ok;
        total.closing = total.closing.or(reply.closing);
        rest = &rest[len..];
    }
    total
}

/// How many request heads could have ended in `input` (each ends with an empty line, `\n\n`
/// or `\n\r\n`): an upper bound on the `200 OK`s it may get.
pub fn heads_ended(input: &[u8]) -> u32 {
    let ends = |pattern: &[u8]| {
        input
            .windows(pattern.len())
            .filter(|w| *w == pattern)
            .count()
    };
    (ends(b"\n\n") + ends(b"\n\r\n")) as u32
}

/// Answers every complete request at the start of `buffer`; returns the bytes they took and
/// the reply. Stops at the first request that ends the connection.
fn parse_requests(buffer: &[u8], body_left: &mut u64) -> (usize, Reply) {
    let mut reply = Reply::default();
    let mut at = 0;
    loop {
        if *body_left > 0 {
            let skip = (*body_left).min((buffer.len() - at) as u64);
            *body_left -= skip;
            at += skip as usize;
            if *body_left > 0 {
                return (at, reply);
            }
        }
        if at == buffer.len() {
            return (at, reply);
        }
        let rest = &buffer[at..];
        match parse_head(rest) {
            Head::Partial => {
                if rest.len() > HEAD_BYTES_MAX {
                    reply.closing = Some(Closing::HeadTooLarge);
                }
                return (at, reply);
            }
            Head::Closing(closing) => {
                reply.closing = Some(closing);
                return (buffer.len(), reply);
            }
            Head::Request {
                head_bytes,
                body_bytes,
                keep_alive,
            } => {
                at += head_bytes;
                *body_left = body_bytes;
                if !keep_alive {
                    reply.closing = Some(Closing::Ok);
                    return (buffer.len(), reply);
                }
                reply.ok += 1;
            }
        }
    }
}

enum Head {
    Partial,
    Closing(Closing),
    Request {
        head_bytes: usize,
        body_bytes: u64,
        keep_alive: bool,
    },
}

fn parse_head(bytes: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut headers);
    let head_bytes = match request.parse(bytes) {
        Ok(httparse::Status::Partial) => return Head::Partial,
        Ok(httparse::Status::Complete(head_bytes)) => head_bytes,
        Err(httparse::Error::TooManyHeaders) => return Head::Closing(Closing::HeadTooLarge),
        Err(_) => return Head::Closing(Closing::BadRequest),
    };
    if head_bytes > HEAD_BYTES_MAX {
        return Head::Closing(Closing::HeadTooLarge);
    }
    // HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes unless told to keep.
    let mut keep_alive = request.version == Some(1);
    let mut body_bytes = 0;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        } else if header.name.eq_ignore_ascii_case("content-length") {
            match std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.parse().ok())
            {
                Some(len) => body_bytes = len,
                None => return Head::Closing(Closing::BadRequest),
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            // A fixed-response server has no use for chunked request bodies; refusing them
            // beats guessing where the next request starts.
            return Head::Closing(Closing::BadRequest);
        }
    }
    Head::Request {
        head_bytes,
        body_bytes,
        keep_alive,
    }
}

/// The client's request: `GET path` on `host`, keep-alive.
pub fn request_bytes(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: ringside\r\n\r\n").into_bytes()
}

/// A response the framer has seen whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framed {
    pub status: u16,
    pub body_bytes: u64,
    /// The server said `Connection: close`: no more responses will come on this connection.
    pub close: bool,
}

/// Why a response stream could not be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The head is not HTTP/1.x, or too large, or has no usable `Content-Length`.
    BadHead,
}

/// Splits a stream of HTTP/1.1 responses to `GET`s, arriving in any pieces, into responses.
/// Holds at most one head (`HEAD_BYTES_MAX`); bodies are counted, not kept.
#[derive(Debug, Default)]
pub struct ResponseFramer {
    head: Vec<u8>,
    /// The response whose body is arriving, and how much of it is still to come.
    current: Option<(Framed, u64)>,
}

impl ResponseFramer {
    /// Consumes a prefix of `bytes`: returns how many bytes it took and the response they
    /// completed, if any. Call again with the rest until it is empty.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(usize, Option<Framed>), FrameError> {
        if let Some((framed, left)) = self.current.as_mut() {
            let take = (*left).min(bytes.len() as u64);
            *left -= take;
            if *left > 0 {
                return Ok((take as usize, None));
            }
            let framed = *framed;
            self.current = None;
            return Ok((take as usize, Some(framed)));
        }
        let held = self.head.len();
        let parsed = if held == 0 {
            parse_response_head(bytes)?
        } else {
            let take = bytes.len().min(HEAD_BYTES_MAX + 1 - held);
            self.head.extend_from_slice(&bytes[..take]);
            parse_response_head(&self.head)?
        };
        match parsed {
            None => {
                if held == 0 {
                    self.head
                        .extend_from_slice(&bytes[..bytes.len().min(HEAD_BYTES_MAX + 1)]);
                }
                if self.head.len() > HEAD_BYTES_MAX {
                    return Err(FrameError::BadHead);
                }
                Ok((bytes.len(), None))
            }
            Some((head_bytes, framed)) => {
                // Bytes of `bytes` that belonged to the head.
                let used = head_bytes - held;
                self.head.clear();
                if framed.body_bytes == 0 {
                    return Ok((used, Some(framed)));
                }
                self.current = Some((framed, framed.body_bytes));
                let (body, done) = self.feed(&bytes[used..])?;
                Ok((used + body, done))
            }
        }
    }

    /// Whether the framer is between responses (nothing half-received).
    pub fn is_idle(&self) -> bool {
        self.head.is_empty() && self.current.is_none()
    }
}

fn parse_response_head(bytes: &[u8]) -> Result<Option<(usize, Framed)>, FrameError> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut response = httparse::Response::new(&mut headers);
    let head_bytes = match response.parse(bytes) {
        Ok(httparse::Status::Partial) => return Ok(None),
        Ok(httparse::Status::Complete(head_bytes)) => head_bytes,
        Err(_) => return Err(FrameError::BadHead),
    };
    let status = response.code.ok_or(FrameError::BadHead)?;
    let mut body_bytes = None;
    let mut close = false;
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(header.value).map_err(|_| FrameError::BadHead)?;
            body_bytes = Some(value.trim().parse().map_err(|_| FrameError::BadHead)?);
        } else if header.name.eq_ignore_ascii_case("connection") {
            close |= header
                .value
                .split(|&b| b == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    // Responses framed by closing the connection, or chunked, are not what a fixed-response
    // server sends; the load generator refuses them rather than guessing.
    let body_bytes = body_bytes.ok_or(FrameError::BadHead)?;
    Ok(Some((
        head_bytes,
        Framed {
            status,
            body_bytes,
            close,
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    fn ok(count: u32) -> Reply {
        Reply {
            ok: count,
            closing: None,
        }
    }

    #[test]
    fn pipelined_requests_get_one_answer_each() {
        let mut session = ServerSession::default();
        assert_eq!(session.on_input(&GET.repeat(3)), ok(3));
        assert!(session.partial.is_empty());
    }

    #[test]
    fn a_request_split_byte_by_byte_gets_one_answer() {
        let mut session = ServerSession::default();
        let mut total = Reply::default();
        for &byte in GET {
            let reply = session.on_input(&[byte]);
            total.ok += reply.ok;
            assert_eq!(reply.closing, None);
        }
        assert_eq!(total, ok(1));
    }

    #[test]
    fn close_garbage_and_huge_heads_end_the_connection() {
        let mut session = ServerSession::default();
        let close = b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
        let mut input = GET.to_vec();
        input.extend_from_slice(close);
        input.extend_from_slice(GET);
        let reply = session.on_input(&input);
        assert_eq!(
            reply,
            Reply {
                ok: 1,
                closing: Some(Closing::Ok)
            }
        );
        assert!(session.on_input(GET).is_empty(), "nothing after the close");

        let mut session = ServerSession::default();
        assert_eq!(
            session.on_input(b"\x16\x03\x01garbage\r\n\r\n").closing,
            Some(Closing::BadRequest)
        );

        let mut session = ServerSession::default();
        let mut huge = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        huge.resize(HEAD_BYTES_MAX + 100, b'a');
        let reply = session.on_input(&huge[..5000]);
        assert!(reply.is_empty());
        let reply = session.on_input(&huge[5000..]);
        assert_eq!(reply.closing, Some(Closing::HeadTooLarge));

        let mut session = ServerSession::default();
        assert_eq!(
            session.on_input(b"GET / HTTP/1.0\r\n\r\n").closing,
            Some(Closing::Ok)
        );
    }

    #[test]
    fn request_bodies_are_skipped() {
        let mut session = ServerSession::default();
        let post = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel";
        assert_eq!(session.on_input(post), ok(1));
        let mut rest = b"lo".to_vec();
        rest.extend_from_slice(GET);
        assert_eq!(session.on_input(&rest), ok(1));
    }

    #[test]
    fn replies_assemble_in_order() {
        let responses = Responses::new(Some(3));
        assert!(responses.ok(1).ends_with(b"Content-Length: 3\r\n\r\nabc"));
        let reply = Reply {
            ok: OK_BATCH as u32 + 2,
            closing: Some(Closing::BadRequest),
        };
        assert_eq!(responses.contiguous(reply), None);
        let mut assembled = Vec::new();
        responses.write(reply, &mut assembled);
        let mut sliced = Vec::new();
        responses.for_each_slice(reply, |of| sliced.extend_from_slice(responses.slice(of)));
        assert_eq!(assembled, sliced);
        let statuses = frame_all(&assembled, &[assembled.len()]).unwrap();
        assert_eq!(statuses.len(), OK_BATCH + 3);
        assert_eq!(statuses.last().unwrap().status, 400);
        assert!(statuses.last().unwrap().close);
    }

    /// Frames `stream` fed in pieces of the given sizes (the last piece takes the rest).
    fn frame_all(stream: &[u8], cuts: &[usize]) -> Result<Vec<Framed>, FrameError> {
        let mut framer = ResponseFramer::default();
        let mut framed = Vec::new();
        let mut at = 0;
        let mut cut = cuts.iter();
        while at < stream.len() {
            let len = cut.next().copied().unwrap_or(stream.len()).max(1);
            let mut piece = &stream[at..(at + len).min(stream.len())];
            at += piece.len();
            while !piece.is_empty() {
                let (used, done) = framer.feed(piece)?;
                assert!(used > 0 || done.is_some(), "the framer made progress");
                piece = &piece[used..];
                framed.extend(done);
            }
        }
        assert!(framer.is_idle());
        Ok(framed)
    }

    /// Requests, garbage and split points for the session's properties: pieces of valid
    /// requests (pipelined, with bodies, closing, HTTP/1.0) mixed with arbitrary bytes.
    fn request_stream() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(GET.to_vec()),
            Just(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec()),
            Just(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n".to_vec()),
            Just(b"GET / HTTP/1.0\r\n\r\n".to_vec()),
            Just(b"\r\n\r\n".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..40),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        /// Goal: a server answers the same requests however its reads split them, and never
        /// answers a request whose head did not end (the property the fuzz target checks on
        /// arbitrary bytes).
        #[test]
        fn answers_do_not_depend_on_the_split(
            input in request_stream(),
            cuts in proptest::collection::vec(1usize..64, 0..32),
        ) {
            let whole = reply_to_pieces(&input, &[]);
            prop_assert_eq!(reply_to_pieces(&input, &cuts), whole);
            prop_assert!(whole.ok <= heads_ended(&input));
        }

        /// Goal: the client counts exactly the responses the server sent, with their statuses
        /// and body lengths, however the stream is cut into reads.
        #[test]
        fn framing_survives_any_split(
            bodies in proptest::collection::vec(0usize..300, 1..8),
            cuts in proptest::collection::vec(1usize..200, 0..64),
        ) {
            let mut stream = Vec::new();
            for (index, &body) in bodies.iter().enumerate() {
                let status = if index % 3 == 2 { 404 } else { 200 };
                stream.extend_from_slice(
                    format!("HTTP/1.1 {status} X\r\nContent-Length: {body}\r\n\r\n").as_bytes(),
                );
                stream.extend(std::iter::repeat_n(b'\n', body));
            }
            let framed = frame_all(&stream, &cuts).unwrap();
            prop_assert_eq!(framed.len(), bodies.len());
            for (index, (framed, &body)) in framed.iter().zip(&bodies).enumerate() {
                prop_assert_eq!(framed.body_bytes, body as u64);
                prop_assert_eq!(framed.status, if index % 3 == 2 { 404 } else { 200 });
            }
        }
    }
}
