//! hangar-store's integration tests, in one test binary (each module was
//! a binary of its own). A new test file goes in this folder as `NAME.rs`,
//! with `mod NAME;` added below; the fixtures stay in `tests/fixtures`
//! (`include_str!("../fixtures/...")`).

mod agent_code_import;
mod export_screens;
mod first_look;
mod import;
mod properties;
mod store;
