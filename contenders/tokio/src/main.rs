//! `ringside-tokio echo|http PORT`: tokio on one thread (the current-thread runtime), as
//! tokio's and hyper's own examples write a server: a task per connection, echo with
//! `read`/`write_all`, HTTP with hyper's HTTP/1 connection (keep-alive and pipelining are
//! hyper's).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BODY: &[u8] = b"Hello, World!";

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (http, port) = match args.as_slice() {
        [_, mode, port] if mode == "echo" || mode == "http" => (mode == "http", port),
        _ => {
            eprintln!("usage: ringside-tokio echo|http PORT");
            std::process::exit(2);
        }
    };
    let listener = TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors or a connection reset before accept: the others go on.
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        if http {
            tokio::spawn(serve_http(stream));
        } else {
            tokio::spawn(echo(stream));
        }
    }
}

async fn echo(mut stream: TcpStream) {
    let mut buffer = vec![0u8; 8192];
    loop {
        let read = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        if stream.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

async fn serve_http(stream: TcpStream) {
    let _ = http1::Builder::new()
        // ringside's servers send no Date.
        .auto_date_header(false)
        .serve_connection(TokioIo::new(stream), service_fn(hello))
        .await;
}

async fn hello(_: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let response = Response::builder()
        .header("Server", "ringside")
        .header("Content-Type", "text/plain")
        .body(Full::new(Bytes::from_static(BODY)))
        .expect("a valid response");
    Ok(response)
}
