//! Scratch files.
