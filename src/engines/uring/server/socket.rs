//! How the ring names a connection's socket: a plain fd, or a direct descriptor (an index into
//! the ring's registered file table, IORING_FILE_INDEX_ALLOC on the multishot accept). With a
//! direct descriptor the kernel skips looking the fd up and taking a reference on its file for
//! every operation (io_uring takes one even in a single-threaded process, since the request may
//! outlive the syscall); the process holds no fd for the socket, so it is shut down and closed
//! with SQEs too.

use std::os::fd::{AsRawFd, OwnedFd};

use io_uring::{opcode, squeue, types};

/// AF_UNSPEC: connect(2) to it disconnects a TCP socket (`disconnect`).
static UNSPECIFIED: libc::sockaddr = libc::sockaddr {
    sa_family: libc::AF_UNSPEC as libc::sa_family_t,
    sa_data: [0; 14],
};

pub enum Socket {
    Fd(OwnedFd),
    /// A slot of the ring's file table; freed by `close`, or with the ring.
    Direct(u32),
}

impl Socket {
    /// Aims `entry`, built for `target()`, at this socket: a direct descriptor is an index with
    /// IOSQE_FIXED_FILE.
    pub fn aim(&self, entry: squeue::Entry) -> squeue::Entry {
        match self {
            Socket::Fd(_) => entry,
            Socket::Direct(_) => entry.flags(squeue::Flags::FIXED_FILE),
        }
    }

    /// The fd field of an SQE for this socket (aim the entry with `aim`).
    pub fn target(&self) -> types::Fd {
        match self {
            Socket::Fd(fd) => types::Fd(fd.as_raw_fd()),
            Socket::Direct(index) => types::Fd(*index as i32),
        }
    }

    /// The SQE that sends the FIN behind what is queued (None: done at once, on the plain fd).
    pub fn shutdown_write(&self) -> Option<squeue::Entry> {
        match self {
            Socket::Fd(fd) => {
                let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Write);
                None
            }
            Socket::Direct(index) => {
                Some(opcode::Shutdown::new(types::Fixed(*index), libc::SHUT_WR).build())
            }
        }
    }

    /// The SQE that disconnects the socket (a connect to AF_UNSPEC: a reset to the peer, and
    /// the socket's queues purged), so the kernel lets go of bytes the peer never read. The
    /// kernel copies the address when it takes the SQE.
    pub fn disconnect(&self) -> squeue::Entry {
        let length = std::mem::size_of::<libc::sockaddr>() as libc::socklen_t;
        self.aim(opcode::Connect::new(self.target(), &UNSPECIFIED, length).build())
    }

    /// The SQE that frees a direct descriptor's slot (None: a plain fd closes when dropped).
    pub fn close(&self) -> Option<squeue::Entry> {
        match self {
            Socket::Fd(_) => None,
            Socket::Direct(index) => Some(opcode::Close::new(types::Fixed(*index)).build()),
        }
    }
}
