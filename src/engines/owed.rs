//! What a connection of the epoll, blocking and threads servers still owes its peer, and how it
//! goes out: HTTP answers as slices of the prebuilt responses, gathered into one `sendmsg` of
//! up to `IOVECS` of them, never copied (as the io_uring servers send them); echo bytes as the
//! copy of the part of one receive the socket did not take.
//!
//! What a connection may owe is bounded by its loop, not here: a loop reads nothing more from a
//! connection until all it owes is sent, so it owes at most the answers to one receive (64 KiB
//! of requests: at most 3,641 of the shortest, each answer a slice of 8 bytes here, consecutive
//! `200 OK`s 16 to a slice) or one receive of echo. Before, the epoll and blocking servers copied
//! every answer into a buffer: one 64 KiB receive of 2,427 pipelined `GET`s asked for 2.4 GB
//! of 1 MiB bodies. Once drained, what a burst grew is given back.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::os::fd::BorrowedFd;

use rustix::io::Errno;
use rustix::net::{SendAncillaryBuffer, SendFlags};

use super::server::ServerCounters;
use crate::protocols::http::{Responses, SliceOf};

/// Slices one `sendmsg` gathers: 64 batches of the smallest answers are ~120 KB, more than a
/// loopback socket's send buffer takes at once.
const IOVECS: usize = 64;
/// Answers a drained connection keeps room for; what a burst grew beyond is given back.
const ANSWERS_KEPT: usize = 16;

/// The output a connection owes, in order.
#[derive(Debug, Default)]
pub struct Owed {
    /// HTTP: slices of the prebuilt responses.
    answers: VecDeque<SliceOf>,
    /// Echo: received bytes the socket did not take yet.
    echo: Vec<u8>,
    /// Bytes of the first answer (or of `echo`) already sent.
    sent: usize,
}

impl Owed {
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty() && self.echo.is_empty()
    }

    /// Queues an answer.
    pub fn answer(&mut self, of: SliceOf) {
        debug_assert!(self.echo.is_empty(), "one connection speaks one protocol");
        self.answers.push_back(of);
    }

    /// Keeps the echo bytes a send did not take.
    pub fn echo(&mut self, rest: &[u8]) {
        debug_assert!(self.is_empty(), "a loop reads nothing while it owes");
        self.echo.extend_from_slice(rest);
    }

    /// Sends until nothing is owed (`Ok(true)`) or the socket takes no more for now
    /// (`Ok(false)`: EAGAIN, or a blocking socket's send timeout); an error means the peer is
    /// gone. Counts the bytes sent and the syscalls.
    pub fn flush(
        &mut self,
        socket: BorrowedFd<'_>,
        responses: Option<&Responses>,
        counters: &ServerCounters,
    ) -> Result<bool, Errno> {
        while !self.is_empty() {
            match counters.call(self.send_some(socket, responses)) {
                Ok(sent) => ServerCounters::add(&counters.bytes_sent, sent as u64),
                Err(Errno::AGAIN) => return Ok(false),
                Err(Errno::INTR) => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(true)
    }

    /// One `send` or `sendmsg` of what is owed, from where it lies; returns the bytes the
    /// socket took.
    fn send_some(
        &mut self,
        socket: BorrowedFd<'_>,
        responses: Option<&Responses>,
    ) -> Result<usize, Errno> {
        debug_assert!(!self.is_empty());
        let mut iovecs = [IoSlice::new(&[]); IOVECS];
        let count = match responses {
            Some(responses) if self.echo.is_empty() => {
                let slices = self.answers.iter().take(IOVECS);
                for (index, &of) in slices.enumerate() {
                    let skip = if index == 0 { self.sent } else { 0 };
                    iovecs[index] = IoSlice::new(&responses.slice(of)[skip..]);
                }
                self.answers.len().min(IOVECS)
            }
            _ => {
                iovecs[0] = IoSlice::new(&self.echo[self.sent..]);
                1
            }
        };
        // One slice (the common case: one read's answers, 16 to a slice) is a plain send, the
        // call the engine made before it owed more.
        let sent = match &iovecs[..count] {
            [one] => rustix::net::send(socket, one, SendFlags::NOSIGNAL)?,
            many => {
                let mut control = SendAncillaryBuffer::default();
                rustix::net::sendmsg(socket, many, &mut control, SendFlags::NOSIGNAL)?
            }
        };
        self.advance(sent, responses);
        Ok(sent)
    }

    /// Drops what a send of `sent` bytes took; gives back what a burst grew once all is sent.
    fn advance(&mut self, mut sent: usize, responses: Option<&Responses>) {
        if !self.echo.is_empty() {
            self.sent += sent;
            debug_assert!(self.sent <= self.echo.len());
            if self.sent == self.echo.len() {
                self.echo = Vec::new();
                self.sent = 0;
            }
            return;
        }
        let responses = responses.expect("answers are slices of the responses");
        while sent > 0 {
            let front = *self.answers.front().expect("sent no more than was owed");
            let left = responses.slice(front).len() - self.sent;
            if sent < left {
                self.sent += sent;
                return;
            }
            sent -= left;
            self.sent = 0;
            self.answers.pop_front();
        }
        if self.answers.is_empty() && self.answers.capacity() > ANSWERS_KEPT {
            self.answers.shrink_to(ANSWERS_KEPT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::http::{Closing, OK_BATCH};
    use std::io::Read;
    use std::os::fd::AsFd;

    /// Goal: what is owed goes out whole and in order across short sends, and what a burst grew
    /// is given back. Method: a socket pair with a small send buffer; answers worth far more
    /// than it holds are flushed, the peer reads a little between flushes.
    #[test]
    fn owed_answers_go_out_in_order_across_short_sends() {
        let responses = Responses::new(Some(100_000));
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&ours, 4096).unwrap();
        let mut owed = Owed::default();
        let slices = [
            SliceOf::Ok(OK_BATCH as u32),
            SliceOf::Head(3),
            SliceOf::Ok(2),
            SliceOf::Closing(Closing::Ok),
        ];
        for _ in 0..10 {
            slices.iter().for_each(|&of| owed.answer(of));
        }
        let expected: Vec<u8> = (0..10)
            .flat_map(|_| slices.iter().flat_map(|&of| responses.slice(of).to_vec()))
            .collect();
        let counters = ServerCounters::default();
        let mut received = Vec::new();
        let mut buffer = vec![0u8; 1 << 20];
        let mut flushes = 0;
        while !owed
            .flush(ours.as_fd(), Some(&responses), &counters)
            .unwrap()
        {
            flushes += 1;
            let read = theirs.read(&mut buffer).unwrap();
            received.extend_from_slice(&buffer[..read]);
        }
        assert!(flushes > 10, "the socket took it in pieces");
        assert!(
            owed.answers.capacity() <= ANSWERS_KEPT,
            "the burst given back"
        );
        drop(ours);
        theirs.read_to_end(&mut received).unwrap();
        assert!(received == expected, "every byte in order");
        assert_eq!(counters.snapshot().bytes_sent, expected.len() as u64);
    }

    #[test]
    fn owed_echo_is_freed_once_sent() {
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut owed = Owed::default();
        owed.echo(b"hello");
        let counters = ServerCounters::default();
        assert!(owed.flush(ours.as_fd(), None, &counters).unwrap());
        assert!(owed.is_empty() && owed.echo.capacity() == 0);
        let mut five = [0u8; 5];
        theirs.read_exact(&mut five).unwrap();
        assert_eq!(&five, b"hello");
    }
}
