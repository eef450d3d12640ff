"""The wire protocols: each maps a :class:`~auto_runtime.models.conversation.ModelRequest` to a request body
and a response body to a :class:`~auto_runtime.models.answers.ModelAnswer`. Pure functions of their
inputs: no I/O, so recorded bodies test them whole."""
