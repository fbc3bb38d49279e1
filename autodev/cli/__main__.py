from autodev.cli import main

main()
