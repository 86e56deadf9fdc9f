from engine.tests.tools.support import harness_factory, http_server  # noqa: F401
