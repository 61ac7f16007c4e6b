//! `ringside-monoio echo|http PORT`: monoio, a thread-per-core runtime on io_uring, with one
//! thread, written as monoio's own examples write a server: a task per connection and owned
//! buffers handed to the kernel and back (`read(buf)` returns the buffer with the result).
//! monoio ships no HTTP server of its own, so HTTP heads are parsed with httparse; every
//! complete request in a read is answered, in order (pipelining), in one write.

use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};

const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\nServer: ringside\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nServer: ringside\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, World!";
const BAD_REQUEST: &[u8] = b"HTTP/1.1 400 Bad Request\r\nServer: ringside\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// A request head (or what has arrived of it) larger than this is refused, as nginx does.
const HEAD_BYTES_MAX: usize = 8192;
const BUFFER_BYTES: usize = 8192;

#[monoio::main(driver = "io_uring")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (http, port) = match args.as_slice() {
        [_, mode, port] if mode == "echo" || mode == "http" => (mode == "http", port),
        _ => {
            eprintln!("usage: ringside-monoio echo|http PORT");
            std::process::exit(2);
        }
    };
    let listener = TcpListener::bind(format!("127.0.0.1:{port}")).expect("cannot listen");
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors or a connection reset before accept: the others go on.
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        if http {
            monoio::spawn(serve_http(stream));
        } else {
            monoio::spawn(echo(stream));
        }
    }
}

async fn echo(mut stream: TcpStream) {
    let mut buffer = Vec::with_capacity(BUFFER_BYTES);
    loop {
        let (read, returned) = stream.read(buffer).await;
        buffer = returned;
        if !matches!(read, Ok(1..)) {
            return;
        }
        let (written, returned) = stream.write_all(buffer).await;
        buffer = returned;
        if written.is_err() {
            return;
        }
        buffer.clear();
    }
}

async fn serve_http(mut stream: TcpStream) {
    let mut input = Vec::with_capacity(BUFFER_BYTES);
    let mut output = Vec::with_capacity(BUFFER_BYTES);
    let mut chunk = Vec::with_capacity(BUFFER_BYTES);
    loop {
        let (read, returned) = stream.read(chunk).await;
        chunk = returned;
        if !matches!(read, Ok(1..)) {
            return;
        }
        input.extend_from_slice(&chunk);
        chunk.clear();
        let (consumed, close) = answer(&input, &mut output);
        input.drain(..consumed);
        let close = close || input.len() > HEAD_BYTES_MAX;
        if close && output.is_empty() {
            output.extend_from_slice(BAD_REQUEST);
        }
        if !output.is_empty() {
            let (written, returned) = stream.write_all(output).await;
            output = returned;
            output.clear();
            if written.is_err() {
                return;
            }
        }
        if close {
            return;
        }
    }
}

/// Appends the responses to the complete requests at the start of `input` to `output`; returns
/// the bytes those requests took and whether the connection ends after the responses.
fn answer(input: &[u8], output: &mut Vec<u8>) -> (usize, bool) {
    let mut consumed = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        let head = match request.parse(&input[consumed..]) {
            Ok(httparse::Status::Complete(head)) => head,
            Ok(httparse::Status::Partial) => return (consumed, false),
            Err(_) => {
                output.extend_from_slice(BAD_REQUEST);
                return (consumed, true);
            }
        };
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
        };
        if header("transfer-encoding").is_some() {
            output.extend_from_slice(BAD_REQUEST);
            return (consumed, true);
        }
        let body = match header("content-length").map(|text| text.trim().parse::<usize>()) {
            None => 0,
            Some(Ok(length)) => length,
            Some(Err(_)) => {
                output.extend_from_slice(BAD_REQUEST);
                return (consumed, true);
            }
        };
        if input.len() - consumed < head + body {
            return (consumed, false);
        }
        consumed += head + body;
        let connection = header("connection").unwrap_or_default();
        let close = connection.contains("close")
            || (request.version == Some(0) && !connection.contains("keep-alive"));
        if close {
            output.extend_from_slice(OK_CLOSE);
            return (consumed, true);
        }
        output.extend_from_slice(OK);
    }
}
