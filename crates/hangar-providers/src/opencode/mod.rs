//! What hangar knows about OpenCode beyond its command line: it writes no
//! transcript file, so its conversations are read from its database
//! (`database`), and so is its usage (`usage`).

pub mod adapter;
pub mod database;
pub mod usage;
