"""Errors the metadata layer raises to its callers."""


class NotController(Exception):
    """This node is not the active controller (anymore): the caller answers NOT_CONTROLLER,
    or routes the request to the controller it learns from the quorum."""
