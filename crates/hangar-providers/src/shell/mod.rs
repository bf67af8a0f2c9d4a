//! The shell and custom providers (`[providers.NAME]`): the plain adapter.

pub mod adapter;
