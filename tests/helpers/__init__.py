"""Helpers shared by test modules in several directories, imported as tests.helpers.NAME."""
