//! Names the scenario's templates give meaning to, shared by the flow that renders them and by
//! the importers that write them.

/// The template functions (`${uuid}`, `${random_int(1, 9)}`): a variable named like one would
/// be read as the function.
pub const FUNCTIONS: &[&str] = &[
    "uuid",
    "now",
    "now_epoch",
    "now_ms",
    "user",
    "iteration",
    "seq",
    "random_int",
    "random_choice",
    "random_string",
    "base64",
];
