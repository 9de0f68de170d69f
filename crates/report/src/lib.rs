//! Renders analysed results. Each format is a module that writes to a `String` or writer; none
//! measures or analyses anything itself.
#![warn(missing_docs)]

pub mod terminal;
