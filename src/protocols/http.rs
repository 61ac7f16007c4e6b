//! HTTP/1.1 as a fixed-response protocol, sans I/O: the server's request parser and canned
//! responses, and the client's response framer. Seed 001's servers answered one fixed response
//! per read without parsing anything (pipelined requests got one answer, garbage got a 200,
//! `Connection: close` was ignored); these do it properly, with `httparse` for every head, and
//! leave the event loops to the engines, which know nothing of HTTP.
//!
//! Server side: a `ServerSession` per connection keeps the part of a request that has arrived
//! so far (never more than `HEAD_BYTES_MAX` plus one read) and turns each read into the answers
//! it owes, in order, as slices of the responses prebuilt once per server in `Responses`
//! (`SliceOf`): so answering costs no formatting and no copy, and what a connection owes is a
//! few bytes per slice however large the bodies. The checks are h1spec's and RFC 9112's: one
//! `Host` in HTTP/1.1, `Content-Length` as digits and only once, no `Transfer-Encoding`; `HEAD`
//! gets the head alone, `Expect: 100-continue` an interim `100 Continue` before its answer, and
//! every response carries a current `Date` (`prebuilt.rs`).
//!
//! Client side: `ResponseFramer` finds where each response ends in a byte stream however it is
//! split (head parsed by httparse, then `Content-Length` bytes of body, interim `1xx` skipped),
//! so the load generator verifies every response rather than trusting that one read is one
//! response.

use std::fmt;

use super::prebuilt::{keep_fresh, Prebuilt, DATE_BYTES};

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
    /// The same answer to a `HEAD`: the head alone.
    OkHead,
    /// `400 Bad Request`: not HTTP, or a request this server does not take (chunked bodies,
    /// HTTP/1.1 without one `Host`, a `Content-Length` that is not one number).
    BadRequest,
    /// `431 Request Header Fields Too Large`: a head over `HEAD_BYTES_MAX`.
    HeadTooLarge,
    /// `417 Expectation Failed`: an HTTP/1.1 `Expect` other than `100-continue`.
    ExpectationFailed,
}

impl Closing {
    pub fn status(self) -> u16 {
        match self {
            Closing::Ok | Closing::OkHead => 200,
            Closing::BadRequest => 400,
            Closing::HeadTooLarge => 431,
            Closing::ExpectationFailed => 417,
        }
    }
}

/// What one read's requests were answered with: `ok` `200 OK`s that keep the connection (to
/// `GET`s or `HEAD`s), then the closing response if there is one (after which the connection
/// closes once it is sent). The answers themselves, in order, went to the read's sink.
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

/// Names a slice of `Responses` without borrowing it, so an engine can queue it: a few bytes
/// whatever the body size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceOf {
    /// `count` (1..=OK_BATCH) `200 OK`s with their bodies, back to back.
    Ok(u32),
    /// `count` (1..=OK_BATCH) answers to `HEAD`: the `200 OK` heads without their bodies.
    Head(u32),
    /// `100 Continue`, before the answer to a request that expects it.
    Continue,
    Closing(Closing),
}

impl SliceOf {
    /// The final responses in the slice (an interim `100 Continue` is none).
    pub fn responses(self) -> u32 {
        match self {
            SliceOf::Ok(count) | SliceOf::Head(count) => count,
            SliceOf::Continue => 0,
            SliceOf::Closing(_) => 1,
        }
    }
}

/// Which prebuilt response a buffer of `Responses` holds.
#[derive(Clone, Copy)]
enum Kind {
    OkBatch,
    HeadBatch,
    Continue,
    OkClose,
    HeadClose,
    BadRequest,
    HeadTooLarge,
    ExpectationFailed,
}

const KINDS: usize = 8;

/// The server's responses, built once when it starts: with `16 x body` in `200 OK`s and one more
/// body in the closing `200 OK`, what a server holds for its answers is about 17 bodies.
pub struct Responses {
    /// Indexed by `Kind`; each lives as long as the server.
    prebuilt: Box<[Prebuilt]>,
    ok_bytes: usize,
    head_bytes: usize,
}

impl fmt::Debug for Responses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Responses {{ ok_bytes: {} }}", self.ok_bytes)
    }
}

/// One response's bytes and where its `Date:` value starts.
fn response(status: &str, close: bool, content_length: usize, body: &[u8]) -> (Vec<u8>, usize) {
    let mut bytes = format!("HTTP/1.1 {status}\r\nServer: ringside\r\nDate: ").into_bytes();
    let date_at = bytes.len();
    bytes.resize(date_at + DATE_BYTES, b' ');
    let connection = if close { "Connection: close\r\n" } else { "" };
    bytes.extend_from_slice(
        format!(
            "\r\nContent-Type: text/plain\r\nContent-Length: {content_length}\r\n{connection}\r\n"
        )
        .as_bytes(),
    );
    bytes.extend_from_slice(body);
    (bytes, date_at)
}

/// `count` copies of a response back to back, with the dates of each.
fn batch((bytes, date_at): (Vec<u8>, usize), count: usize) -> Prebuilt {
    let dates = (0..count)
        .map(|index| index * bytes.len() + date_at)
        .collect();
    Prebuilt::new(bytes.repeat(count), dates)
}

impl Responses {
    /// Responses whose `200 OK` carries `body_bytes` bytes (the default body when None), dated
    /// now (`keep_dates_fresh` keeps them so).
    pub fn new(body_bytes: Option<usize>) -> Responses {
        let body: Vec<u8> = match body_bytes {
            None => BODY_DEFAULT.to_vec(),
            // A repeating alphabet, so a client that checks lengths also sees real bytes.
            Some(len) => (0..len).map(|i| b'a' + (i % 26) as u8).collect(),
        };
        let ok = response("200 OK", false, body.len(), &body);
        let head = response("200 OK", false, body.len(), b"");
        let (ok_bytes, head_bytes) = (ok.0.len(), head.0.len());
        let continuing = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
        let mut prebuilt: Vec<Option<Prebuilt>> = (0..KINDS).map(|_| None).collect();
        let mut put = |kind: Kind, bytes: Prebuilt| prebuilt[kind as usize] = Some(bytes);
        put(Kind::OkBatch, batch(ok, OK_BATCH));
        put(Kind::HeadBatch, batch(head, OK_BATCH));
        put(Kind::Continue, Prebuilt::new(continuing, Vec::new()));
        put(
            Kind::OkClose,
            batch(response("200 OK", true, body.len(), &body), 1),
        );
        put(
            Kind::HeadClose,
            batch(response("200 OK", true, body.len(), b""), 1),
        );
        put(
            Kind::BadRequest,
            batch(response("400 Bad Request", true, 0, b""), 1),
        );
        let too_large = response("431 Request Header Fields Too Large", true, 0, b"");
        put(Kind::HeadTooLarge, batch(too_large, 1));
        let failed = response("417 Expectation Failed", true, 0, b"");
        put(Kind::ExpectationFailed, batch(failed, 1));
        let prebuilt: Box<[Prebuilt]> = prebuilt
            .into_iter()
            .map(|bytes| bytes.expect("every kind is built"))
            .collect();
        super::prebuilt::set_dates(&prebuilt, std::time::SystemTime::now());
        Responses {
            prebuilt,
            ok_bytes,
            head_bytes,
        }
    }

    /// Keeps the `Date` of every response current for as long as the process lives (one
    /// thread, waking once a second); a server's responses are made once and never dropped.
    pub fn keep_dates_fresh(&'static self) {
        keep_fresh(&self.prebuilt);
    }

    fn bytes(&self, kind: Kind) -> &[u8] {
        self.prebuilt[kind as usize].bytes()
    }

    /// `count` (1..=OK_BATCH) plain `200 OK`s as one slice.
    pub fn ok(&self, count: usize) -> &[u8] {
        debug_assert!((1..=OK_BATCH).contains(&count));
        &self.bytes(Kind::OkBatch)[..self.ok_bytes * count]
    }

    pub fn closing(&self, closing: Closing) -> &[u8] {
        self.bytes(match closing {
            Closing::Ok => Kind::OkClose,
            Closing::OkHead => Kind::HeadClose,
            Closing::BadRequest => Kind::BadRequest,
            Closing::HeadTooLarge => Kind::HeadTooLarge,
            Closing::ExpectationFailed => Kind::ExpectationFailed,
        })
    }

    /// The memory every response lives in, one slice per prebuilt response (to register it
    /// with a ring).
    pub fn memory(&self) -> impl Iterator<Item = &[u8]> {
        self.prebuilt.iter().map(Prebuilt::bytes)
    }

    pub fn slice(&self, of: SliceOf) -> &[u8] {
        match of {
            SliceOf::Ok(count) => self.ok(count as usize),
            SliceOf::Head(count) => {
                debug_assert!((1..=OK_BATCH as u32).contains(&count));
                &self.bytes(Kind::HeadBatch)[..self.head_bytes * count as usize]
            }
            SliceOf::Continue => self.bytes(Kind::Continue),
            SliceOf::Closing(closing) => self.closing(closing),
        }
    }
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
    /// The answers owed for `input`, the bytes of one read: each slice of them, in order, to
    /// `answer` (consecutive `200 OK`s as one slice of up to `OK_BATCH`), and their count.
    pub fn on_input(&mut self, input: &[u8], answer: &mut impl FnMut(SliceOf)) -> Reply {
        if self.done {
            return Reply::default();
        }
        let mut answers = Answers {
            answer,
            run: None,
            reply: Reply::default(),
        };
        if self.partial.is_empty() {
            let consumed = parse_requests(input, &mut self.body_left, &mut answers);
            if answers.reply.closing.is_none() {
                self.partial.extend_from_slice(&input[consumed..]);
            }
        } else {
            self.partial.extend_from_slice(input);
            let consumed = parse_requests(&self.partial, &mut self.body_left, &mut answers);
            self.partial.drain(..consumed);
        }
        let reply = answers.finish();
        if reply.closing.is_some() {
            self.done = true;
            self.partial = Vec::new();
        }
        debug_assert!(self.partial.len() <= HEAD_BYTES_MAX);
        reply
    }
}

/// The answers of one read as they are decided: runs of the same `200 OK` gathered into one
/// slice, the count kept.
struct Answers<'a, F: FnMut(SliceOf)> {
    answer: &'a mut F,
    run: Option<SliceOf>,
    reply: Reply,
}

impl<F: FnMut(SliceOf)> Answers<'_, F> {
    /// One more `200 OK` that keeps the connection (the head alone for a `HEAD`).
    fn kept(&mut self, head_only: bool) {
        self.reply.ok += 1;
        let batch = OK_BATCH as u32;
        self.run = match (self.run, head_only) {
            (Some(SliceOf::Ok(count)), false) if count < batch => Some(SliceOf::Ok(count + 1)),
            (Some(SliceOf::Head(count)), true) if count < batch => Some(SliceOf::Head(count + 1)),
            _ => {
                self.flush();
                Some(if head_only {
                    SliceOf::Head(1)
                } else {
                    SliceOf::Ok(1)
                })
            }
        };
    }

    /// An interim `100 Continue`, before the answer that follows.
    fn interim(&mut self) {
        self.flush();
        (self.answer)(SliceOf::Continue);
    }

    /// The answer that ends the connection; nothing follows it.
    fn closing(&mut self, closing: Closing) {
        debug_assert!(self.reply.closing.is_none());
        self.flush();
        (self.answer)(SliceOf::Closing(closing));
        self.reply.closing = Some(closing);
    }

    fn flush(&mut self) {
        if let Some(run) = self.run.take() {
            (self.answer)(run);
        }
    }

    fn finish(mut self) -> Reply {
        self.flush();
        self.reply
    }
}

/// What a session answers to `input` arriving in pieces: the answers, one response a slice, in
/// order, and their count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transcript {
    /// `200 OK`s that kept the connection.
    pub ok: u32,
    /// The first closing response.
    pub closing: Option<Closing>,
    /// Every slice sent, one response each (`Ok(1)`, `Head(1)`, `Continue`, `Closing`), so
    /// two transcripts compare equal however the answers were gathered.
    pub answers: Vec<SliceOf>,
}

/// What a session answers to `input` arriving in pieces of the sizes in `cuts` (each at least
/// one byte; the rest in one piece once they run out), as a server does however TCP splits the
/// bytes. The fuzz target and the tests hold it to two properties: the answer does not depend
/// on the cuts, and no answer is owed for a request whose head did not end (`heads_ended`).
pub fn reply_to_pieces(input: &[u8], cuts: &[usize]) -> Transcript {
    let mut session = ServerSession::default();
    let mut total = Transcript::default();
    let mut rest = input;
    let mut cut = cuts.iter();
    while !rest.is_empty() {
        let len = cut
            .next()
            .map_or(rest.len(), |&len| len.clamp(1, rest.len()));
        let (piece, later) = rest.split_at(len);
        rest = later;
        let answers = &mut total.answers;
        let reply = session.on_input(piece, &mut |of| match of {
            SliceOf::Ok(count) => answers.extend((0..count).map(|_| SliceOf::Ok(1))),
            SliceOf::Head(count) => answers.extend((0..count).map(|_| SliceOf::Head(1))),
            other => answers.push(other),
        });
        assert!(session.partial.len() <= HEAD_BYTES_MAX);
        assert!(
            total.closing.is_none() || reply.is_empty(),
            "an answer after the close"
        );
        total.ok += reply.ok;
        total.closing = total.closing.or(reply.closing);
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

/// Answers every complete request at the start of `buffer`; returns the bytes they took. Stops
/// at the first request that ends the connection.
fn parse_requests<F: FnMut(SliceOf)>(
    buffer: &[u8],
    body_left: &mut u64,
    answers: &mut Answers<'_, F>,
) -> usize {
    let mut at = 0;
    loop {
        if *body_left > 0 {
            let skip = (*body_left).min((buffer.len() - at) as u64);
            *body_left -= skip;
            at += skip as usize;
            if *body_left > 0 {
                return at;
            }
        }
        if at == buffer.len() {
            return at;
        }
        let rest = &buffer[at..];
        let request = match parse_head(rest) {
            Head::Partial => {
                if rest.len() > HEAD_BYTES_MAX {
                    answers.closing(Closing::HeadTooLarge);
                }
                return at;
            }
            Head::Closing(closing) => {
                answers.closing(closing);
                return buffer.len();
            }
            Head::Request(request) => request,
        };
        at += request.head_bytes;
        *body_left = request.body_bytes;
        if request.continues {
            answers.interim();
        }
        if !request.keep_alive {
            let closing = match request.head_only {
                true => Closing::OkHead,
                false => Closing::Ok,
            };
            answers.closing(closing);
            return buffer.len();
        }
        answers.kept(request.head_only);
    }
}

enum Head {
    Partial,
    Closing(Closing),
    Request(Request),
}

/// A request head parsed and accepted.
struct Request {
    head_bytes: usize,
    body_bytes: u64,
    keep_alive: bool,
    /// `HEAD`: answered with the head alone.
    head_only: bool,
    /// `Expect: 100-continue` with a body to come: `100 Continue` goes out first.
    continues: bool,
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
    let http_11 = request.version == Some(1);
    // HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes unless told to keep.
    let mut keep_alive = http_11;
    let mut content_length = None;
    let mut hosts = 0;
    let mut expects_continue = false;
    for header in request.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            // RFC 9112 6.3: a second length, a list, a sign or anything but digits leaves the
            // body's end unknown (request smuggling starts there): refused, never guessed.
            match (content_length, digits(header.value)) {
                (None, Some(length)) => content_length = Some(length),
                _ => return Head::Closing(Closing::BadRequest),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // A fixed-response server has no use for chunked request bodies; refusing them
            // beats guessing where the next request starts.
            return Head::Closing(Closing::BadRequest);
        } else if name.eq_ignore_ascii_case("host") {
            hosts += 1;
        } else if name.eq_ignore_ascii_case("expect") && http_11 {
            // RFC 9110 10.1.1: HTTP/1.0 expectations are ignored.
            if !header
                .value
                .trim_ascii()
                .eq_ignore_ascii_case(b"100-continue")
            {
                return Head::Closing(Closing::ExpectationFailed);
            }
            expects_continue = true;
        }
    }
    // RFC 9112 3.2: HTTP/1.1 needs exactly one Host; no version may carry two.
    if hosts > 1 || (http_11 && hosts == 0) {
        return Head::Closing(Closing::BadRequest);
    }
    let body_bytes = content_length.unwrap_or(0);
    Head::Request(Request {
        head_bytes,
        body_bytes,
        keep_alive,
        head_only: request.method == Some("HEAD"),
        // Without a body to wait for, the client has nothing to hold back.
        continues: expects_continue && body_bytes > 0,
    })
}

/// A `Content-Length` value: digits only (around them optional whitespace), that fit a u64.
fn digits(value: &[u8]) -> Option<u64> {
    let value = value.trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
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
    /// The server said it closes (`Connection: close`, or HTTP/1.0 without keep-alive): no
    /// more responses will come on this connection.
    pub close: bool,
}

/// Why a response stream could not be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The head is not HTTP/1.x, or too large, or has no usable `Content-Length`.
    BadHead,
}

/// Splits a stream of HTTP/1.x responses, arriving in any pieces, into responses: interim
/// `1xx` answers skipped, the body of each final one counted by its `Content-Length` (none
/// for a `HEAD`, a `204` or a `304`). Holds at most one head (`HEAD_BYTES_MAX`); bodies are
/// counted, not kept.
#[derive(Debug, Default)]
pub struct ResponseFramer {
    head: Vec<u8>,
    /// The response whose body is arriving, and how much of it is still to come.
    current: Option<(Framed, u64)>,
    /// The next final response answers a `HEAD`: no body follows it.
    answers_head: bool,
}

/// A response head, parsed.
enum Parsed {
    /// An interim `1xx`: a final response follows.
    Interim(usize),
    Final(usize, Framed),
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
            parse_response_head(bytes, self.answers_head)?
        } else {
            let take = bytes.len().min(HEAD_BYTES_MAX + 1 - held);
            self.head.extend_from_slice(&bytes[..take]);
            parse_response_head(&self.head, self.answers_head)?
        };
        let (head_bytes, framed) = match parsed {
            None => {
                if held == 0 {
                    self.head
                        .extend_from_slice(&bytes[..bytes.len().min(HEAD_BYTES_MAX + 1)]);
                }
                if self.head.len() > HEAD_BYTES_MAX {
                    return Err(FrameError::BadHead);
                }
                return Ok((bytes.len(), None));
            }
            Some(Parsed::Interim(head_bytes)) => (head_bytes, None),
            Some(Parsed::Final(head_bytes, framed)) => (head_bytes, Some(framed)),
        };
        // Bytes of `bytes` that belonged to the head.
        let used = head_bytes - held;
        self.head.clear();
        let Some(framed) = framed else {
            // The final response follows the interim one.
            let (more, done) = self.feed(&bytes[used..])?;
            return Ok((used + more, done));
        };
        self.answers_head = false;
        if framed.body_bytes == 0 {
            return Ok((used, Some(framed)));
        }
        self.current = Some((framed, framed.body_bytes));
        let (body, done) = self.feed(&bytes[used..])?;
        Ok((used + body, done))
    }

    /// Says that the next final response answers a `HEAD`, so no body follows its head
    /// whatever its `Content-Length` says.
    pub fn expect_head_answer(&mut self) {
        debug_assert!(self.current.is_none());
        self.answers_head = true;
    }

    /// Whether the framer is between responses (nothing half-received).
    pub fn is_idle(&self) -> bool {
        self.head.is_empty() && self.current.is_none()
    }
}

fn parse_response_head(bytes: &[u8], answers_head: bool) -> Result<Option<Parsed>, FrameError> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut response = httparse::Response::new(&mut headers);
    let head_bytes = match response.parse(bytes) {
        Ok(httparse::Status::Partial) => return Ok(None),
        Ok(httparse::Status::Complete(head_bytes)) => head_bytes,
        Err(_) => return Err(FrameError::BadHead),
    };
    let status = response.code.ok_or(FrameError::BadHead)?;
    match status {
        // A protocol switch is not HTTP any more.
        101 => return Err(FrameError::BadHead),
        100..=199 => return Ok(Some(Parsed::Interim(head_bytes))),
        _ => {}
    }
    let mut body_bytes = None;
    // HTTP/1.1 keeps the connection unless it says close; HTTP/1.0 closes unless it says
    // keep-alive (Python's http.server, for one, answers in HTTP/1.0 and closes).
    let mut keep_alive = response.version == Some(1);
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(header.value).map_err(|_| FrameError::BadHead)?;
            body_bytes = Some(value.trim().parse().map_err(|_| FrameError::BadHead)?);
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    // RFC 9112 6.3: these have no body, whatever they say.
    if answers_head || status == 204 || status == 304 {
        body_bytes = Some(0);
    }
    // Responses framed by closing the connection, or chunked, are not what a fixed-response
    // server sends; the load generator refuses them rather than guessing.
    let body_bytes = body_bytes.ok_or(FrameError::BadHead)?;
    let framed = Framed {
        status,
        body_bytes,
        close: !keep_alive,
    };
    Ok(Some(Parsed::Final(head_bytes, framed)))
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

    /// The reply to one read, its slices dropped.
    fn answer(session: &mut ServerSession, input: &[u8]) -> Reply {
        session.on_input(input, &mut |_| {})
    }

    /// The slices one read is answered with.
    fn slices(session: &mut ServerSession, input: &[u8]) -> Vec<SliceOf> {
        let mut slices = Vec::new();
        session.on_input(input, &mut |of| slices.push(of));
        slices
    }

    #[test]
    fn pipelined_requests_get_one_answer_each() {
        let mut session = ServerSession::default();
        assert_eq!(answer(&mut session, &GET.repeat(3)), ok(3));
        assert!(session.partial.is_empty());
        let many = slices(&mut session, &GET.repeat(OK_BATCH + 2));
        assert_eq!(many, [SliceOf::Ok(OK_BATCH as u32), SliceOf::Ok(2)]);
    }

    #[test]
    fn a_request_split_byte_by_byte_gets_one_answer() {
        let mut session = ServerSession::default();
        let mut total = Reply::default();
        for &byte in GET {
            let reply = answer(&mut session, &[byte]);
            total.ok += reply.ok;
            assert_eq!(reply.closing, None);
        }
        assert_eq!(total, ok(1));
    }

    #[test]
    fn close_garbage_and_huge_heads_end_the_connection() {
        let mut session = ServerSession::default();
        let close = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let mut input = GET.to_vec();
        input.extend_from_slice(close);
        input.extend_from_slice(GET);
        let reply = answer(&mut session, &input);
        assert_eq!(
            reply,
            Reply {
                ok: 1,
                closing: Some(Closing::Ok)
            }
        );
        assert!(
            answer(&mut session, GET).is_empty(),
            "nothing after the close"
        );

        let mut session = ServerSession::default();
        assert_eq!(
            answer(&mut session, b"\x16\x03\x01garbage\r\n\r\n").closing,
            Some(Closing::BadRequest)
        );

        let mut session = ServerSession::default();
        let mut huge = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        huge.resize(HEAD_BYTES_MAX + 100, b'a');
        let reply = answer(&mut session, &huge[..5000]);
        assert!(reply.is_empty());
        let reply = answer(&mut session, &huge[5000..]);
        assert_eq!(reply.closing, Some(Closing::HeadTooLarge));

        let mut session = ServerSession::default();
        assert_eq!(
            answer(&mut session, b"GET / HTTP/1.0\r\n\r\n").closing,
            Some(Closing::Ok)
        );
    }

    #[test]
    fn request_bodies_are_skipped() {
        let mut session = ServerSession::default();
        let post = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhel";
        assert_eq!(answer(&mut session, post), ok(1));
        let mut rest = b"lo".to_vec();
        rest.extend_from_slice(GET);
        assert_eq!(answer(&mut session, &rest), ok(1));
    }

    /// Goal: the h1spec-style cases, sans I/O: what each request is answered with, the whole
    /// request in one read. The same table runs over every engine in `tests/http.rs`.
    #[test]
    fn h1spec_cases_get_their_answers() {
        let close = |closing| vec![SliceOf::Closing(closing)];
        let bad = close(Closing::BadRequest);
        let cases: [(&[u8], Vec<SliceOf>); 13] = [
            (GET, vec![SliceOf::Ok(1)]),
            (b"GET / HTTP/1.1\r\n\r\n", bad.clone()),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", bad.clone()),
            (b"GET / HTTP/1.0\r\n\r\n", close(Closing::Ok)),
            (
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab",
                bad.clone(),
            ),
            (
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                bad.clone(),
            ),
            (
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 1\r\n\r\na",
                bad.clone(),
            ),
            (
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\na",
                bad.clone(),
            ),
            (
                b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                bad.clone(),
            ),
            (
                b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
                vec![SliceOf::Head(1)],
            ),
            (
                b"HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                close(Closing::OkHead),
            ),
            (
                b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
                vec![SliceOf::Continue, SliceOf::Ok(1)],
            ),
            (
                b"GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n",
                close(Closing::ExpectationFailed),
            ),
        ];
        for (request, expected) in cases {
            let mut session = ServerSession::default();
            let shown = String::from_utf8_lossy(request);
            assert_eq!(slices(&mut session, request), expected, "{shown}");
        }
        // A body after `100 Continue` is skipped, and the next request answered.
        let mut session = ServerSession::default();
        let post =
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(answer(&mut session, post), ok(1));
        let mut rest = b"hi".to_vec();
        rest.extend_from_slice(GET);
        assert_eq!(slices(&mut session, &rest), [SliceOf::Ok(1)]);
    }

    #[test]
    fn answers_keep_their_order_across_kinds() {
        let mut session = ServerSession::default();
        let head = b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n";
        let input = [GET, GET, head, head, GET].concat();
        let expected = [SliceOf::Ok(2), SliceOf::Head(2), SliceOf::Ok(1)];
        assert_eq!(slices(&mut session, &input), expected);
    }

    #[test]
    fn responses_are_dated_sized_and_frame_in_order() {
        let responses = Responses::new(Some(3));
        let one = responses.ok(1);
        assert!(one.ends_with(b"Content-Length: 3\r\n\r\nabc"));
        let date_at = one.windows(6).position(|w| w == b"Date: ").unwrap() + 6;
        let date = std::str::from_utf8(&one[date_at..date_at + DATE_BYTES]).unwrap();
        let sent = httpdate::parse_http_date(date).unwrap();
        let age = std::time::SystemTime::now().duration_since(sent).unwrap();
        assert!(age < std::time::Duration::from_secs(5), "{date}");
        let head = responses.slice(SliceOf::Head(1));
        assert_eq!(
            head,
            &one[..one.len() - 3],
            "a HEAD answer is the head of a GET's"
        );
        let slices = [
            SliceOf::Ok(OK_BATCH as u32),
            SliceOf::Continue,
            SliceOf::Head(2),
            SliceOf::Ok(2),
            SliceOf::Closing(Closing::BadRequest),
        ];
        let mut stream = Vec::new();
        let mut framer = ResponseFramer::default();
        let mut framed = Vec::new();
        for of in slices {
            let bytes = responses.slice(of);
            stream.extend_from_slice(bytes);
            let mut rest = bytes;
            while !rest.is_empty() {
                if matches!(of, SliceOf::Head(_)) && framer.is_idle() {
                    framer.expect_head_answer();
                }
                let (used, done) = framer.feed(rest).unwrap();
                rest = &rest[used..];
                framed.extend(done);
            }
        }
        assert_eq!(framed.len(), OK_BATCH + 5, "the interim 100 is no response");
        assert_eq!(framed[OK_BATCH].body_bytes, 0, "a HEAD answer has no body");
        assert_eq!(framed[OK_BATCH + 2].body_bytes, 3);
        assert_eq!(framed.last().unwrap().status, 400);
        assert!(framed.last().unwrap().close);
    }

    #[test]
    fn the_framer_closes_after_http_10_and_keeps_alive_when_told() {
        let framed = frame_all(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", &[]).unwrap();
        assert!(framed[0].close, "HTTP/1.0 closes unless it says keep-alive");
        let kept = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n";
        assert!(!frame_all(kept, &[]).unwrap()[0].close);
        let switching = b"HTTP/1.1 101 Switching Protocols\r\n\r\n";
        assert_eq!(frame_all(switching, &[]), Err(FrameError::BadHead));
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
            Just(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc".to_vec()),
            Just(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec()),
            Just(b"GET / HTTP/1.0\r\n\r\n".to_vec()),
            Just(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
            Just(
                b"PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab"
                    .to_vec()
            ),
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
            prop_assert_eq!(&reply_to_pieces(&input, &cuts), &whole);
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
