"""The ``catallax`` command line: ``main.py`` parses, one module per subcommand handles."""
