from galaxyview.cli.main import main

raise SystemExit(main())
