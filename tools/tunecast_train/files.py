"""Outputs written whole or not at all."""
import contextlib
import os
import tempfile


@contextlib.contextmanager
def replacing(path):
    """Yields a temporary path beside `path` (same extension, so tools that pick a format by name
    still can); when the block ends normally it replaces `path`, else it is removed: an interrupted
    or failed write leaves the previous file and no half-written one."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                                     suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        yield temporary
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp's file is private; the output is not
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
