//! The proto3 JSON mapping.
