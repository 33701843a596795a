struct s { int x; };
