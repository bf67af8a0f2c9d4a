//! Memory the fake holds on purpose, so tests can see a heavy agent in /proc.
//!
//! Every page is written, so the memory counts in the resident set, not just
//! the address space. It is kept until the process ends.

const MIB: usize = 1024 * 1024;

#[derive(Default)]
pub struct Ballast {
    blocks: Vec<Box<[u8]>>,
}

impl Ballast {
    /// Allocates `mb` MiB and writes every byte.
    pub fn add(&mut self, mb: usize) {
        // A non-zero fill is a real memset: calloc'd zero pages would stay unbacked.
        let block = vec![0xA5u8; mb.saturating_mul(MIB)].into_boxed_slice();
        self.blocks.push(std::hint::black_box(block));
    }
}
