"""The spec's assertion language: pure, no IO."""
