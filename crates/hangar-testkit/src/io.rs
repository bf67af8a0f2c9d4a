//! Reads that a signal does not cut short.
//!
//! Every integration test runs in one process (`it`), where some test's
//! child always exits sooner or later: its `SIGCHLD` lands on whichever
//! thread the kernel picks, and a blocking socket read with a timeout
//! (`SO_RCVTIMEO`) is never restarted after a handler, even one installed
//! with `SA_RESTART` (signal(7)): it fails with `Interrupted`. std's
//! `read` does not retry that; `read_exact` and `write_all` do.

use std::io::{ErrorKind, Read, Result};

/// `reader.read(buf)`, taken again while a signal interrupts it.
pub fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that is interrupted twice before it gives its bytes.
    struct Flaky(u8);

    impl Read for Flaky {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
            if self.0 > 0 {
                self.0 -= 1;
                return Err(ErrorKind::Interrupted.into());
            }
            buf[0] = b'x';
            Ok(1)
        }
    }

    #[test]
    fn an_interrupted_read_is_taken_again() {
        let mut buf = [0u8; 4];
        assert_eq!(read_some(&mut Flaky(2), &mut buf).unwrap(), 1);
        assert_eq!(buf[0], b'x');
    }
}
