def from_file():
    return "ok"
