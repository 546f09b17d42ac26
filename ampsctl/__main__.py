from ampsctl.cli.app import main

main()
