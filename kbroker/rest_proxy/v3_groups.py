"""placeholder"""


def install(routes):
    pass
