struct s {
	int a; int b;
#ifdef X
	int c;
#endif
	int d;
};
