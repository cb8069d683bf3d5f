int main_placeholder_report();
