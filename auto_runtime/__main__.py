from auto_runtime.cli import main

raise SystemExit(main())
