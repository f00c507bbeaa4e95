from aapcgen.cli import main

main()
