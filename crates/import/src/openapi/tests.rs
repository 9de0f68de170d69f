//! Unit tests of the OpenAPI importer.
