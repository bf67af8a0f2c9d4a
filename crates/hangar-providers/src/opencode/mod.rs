//! What hangar knows about OpenCode beyond its command line: it writes no
//! transcript file, so its conversations are read from its database
//! (`database`), and so are its usage (`usage`) and its turns (`turns`).

pub mod adapter;
pub mod database;
pub mod turns;
pub mod usage;
