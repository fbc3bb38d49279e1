from autodev.cli.root import main

main()
