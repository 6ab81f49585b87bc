"""Test doubles that speak the real protocols (gRPC, HTTP), reusable by tests and simulations."""
