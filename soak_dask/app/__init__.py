"""The application: the ``soak`` command, run files, the demo and ``soak info``."""
